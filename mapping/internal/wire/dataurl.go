package wire

import (
	"strings"

	"github.com/bridge-dev/bridge/bridge"
)

// ParseDataURL splits "data:<media type>;base64,<payload>". Only that exact
// form is split (a media type without parameters), so DataURL of the parts
// gives the same bytes back.
func ParseDataURL(s string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return "", "", false
	}
	mt, data, ok := strings.Cut(rest, ";base64,")
	if !ok || mt == "" || strings.ContainsAny(mt, ";,") {
		return "", "", false
	}
	return mt, data, true
}

// DataURL renders a base64 payload as a data: URL.
func DataURL(mediaType, data string) string { return "data:" + mediaType + ";base64," + data }

// PartType is the kind of part a file of mediaType makes: an image, an
// audio clip, or any other file.
func PartType(mediaType string) bridge.PartType {
	switch {
	case strings.HasPrefix(mediaType, "image/"):
		return bridge.PartImage
	case strings.HasPrefix(mediaType, "audio/"):
		return bridge.PartAudio
	}
	return bridge.PartFile
}

// PartText is the text of a text part, or of a data part its JSON
// (compact), for a dialect that carries data as text.
func PartText(p *bridge.Part) string {
	if p.Type == bridge.PartData {
		return string(Compact(p.JSON))
	}
	return p.Text
}
