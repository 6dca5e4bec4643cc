package wire

import "github.com/bridge-dev/bridge/bridge"

// RequestEncoding is the state every request encoder (hub -> wire) keeps:
// the request, whether its Extra is the encoding dialect's own, and what
// could not be carried.
type RequestEncoding struct {
	Req     *bridge.Request
	Same    bool // Req.Extra is the dialect's own
	Dropped []string
}

// Encode runs a request encoder over req in dialect: encode, a method of
// the encoder that embeds e, writes the body from e.Req and adds to
// e.Dropped. It returns the body with what was dropped, or the error
// alone; a nil request is an internal error.
func (e *RequestEncoding) Encode(req *bridge.Request, dialect string, encode func() ([]byte, error)) (body []byte, dropped []string, err error) {
	if req == nil {
		return nil, nil, bridge.Errorf(bridge.CodeInternal, "%s: nil request", dialect)
	}
	e.Req, e.Same = req, req.ExtraDialect == dialect
	body, err = encode()
	if err != nil {
		return nil, nil, err
	}
	return body, e.Dropped, nil
}
