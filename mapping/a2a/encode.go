package a2a

import (
	"strconv"
	"time"

	a2asdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/bridge-dev/bridge/mapping/internal/wire"
)

// The appenders write the SDK's types as JSON in version v's shape: 0.3
// with the kind discriminators a2a-go writes, 1.0 with TASK_STATE_* and
// ROLE_* names and flattened parts. They append to a caller's buffer, so a
// stream reuses one buffer for every frame.

// appendTime writes an ISO-8601 UTC time with milliseconds.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	return append(b, '"')
}

func appendMeta(b []byte, meta map[string]any) []byte {
	if len(meta) == 0 {
		return b
	}
	b = append(b, `,"metadata":`...)
	return appendJSON(b, meta)
}

// AppendPart appends one part.
func AppendPart(b []byte, p a2asdk.Part, v Version) []byte {
	switch t := p.(type) {
	case *a2asdk.TextPart:
		return AppendPart(b, *t, v)
	case *a2asdk.DataPart:
		return AppendPart(b, *t, v)
	case *a2asdk.FilePart:
		return AppendPart(b, *t, v)
	case a2asdk.TextPart:
		if v == V03 {
			b = append(b, `{"kind":"text","text":`...)
		} else {
			b = append(b, `{"text":`...)
		}
		b = wire.AppendString(b, t.Text)
		b = appendMeta(b, t.Metadata)
	case a2asdk.DataPart:
		if v == V03 {
			b = append(b, `{"kind":"data","data":`...)
		} else {
			b = append(b, `{"data":`...)
		}
		if t.Data == nil {
			b = append(b, "{}"...)
		} else {
			b = appendJSON(b, t.Data)
		}
		b = appendMeta(b, t.Metadata)
	case a2asdk.FilePart:
		var meta a2asdk.FileMeta
		var bytes, uri string
		switch f := t.File.(type) {
		case a2asdk.FileBytes:
			meta, bytes = f.FileMeta, f.Bytes
		case *a2asdk.FileBytes:
			meta, bytes = f.FileMeta, f.Bytes
		case a2asdk.FileURI:
			meta, uri = f.FileMeta, f.URI
		case *a2asdk.FileURI:
			meta, uri = f.FileMeta, f.URI
		}
		if v == V03 {
			b = append(b, `{"kind":"file","file":{`...)
			if bytes != "" || uri == "" {
				b = append(b, `"bytes":`...)
				b = wire.AppendString(b, bytes)
			} else {
				b = append(b, `"uri":`...)
				b = wire.AppendString(b, uri)
			}
			if meta.MimeType != "" {
				b = append(b, `,"mimeType":`...)
				b = wire.AppendString(b, meta.MimeType)
			}
			if meta.Name != "" {
				b = append(b, `,"name":`...)
				b = wire.AppendString(b, meta.Name)
			}
			b = append(b, '}')
		} else {
			if bytes != "" || uri == "" {
				b = append(b, `{"raw":`...)
				b = wire.AppendString(b, bytes)
			} else {
				b = append(b, `{"url":`...)
				b = wire.AppendString(b, uri)
			}
			if meta.MimeType != "" {
				b = append(b, `,"mediaType":`...)
				b = wire.AppendString(b, meta.MimeType)
			}
			if meta.Name != "" {
				b = append(b, `,"filename":`...)
				b = wire.AppendString(b, meta.Name)
			}
		}
		b = appendMeta(b, t.Metadata)
	default:
		return append(b, `{"kind":"text","text":""}`...)
	}
	return append(b, '}')
}

func appendParts(b []byte, parts a2asdk.ContentParts, v Version) []byte {
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendPart(b, p, v)
	}
	return append(b, ']')
}

// AppendMessage appends a message.
func AppendMessage(b []byte, m *a2asdk.Message, v Version) []byte {
	if v == V03 {
		b = append(b, `{"kind":"message","messageId":`...)
	} else {
		b = append(b, `{"messageId":`...)
	}
	b = wire.AppendString(b, m.ID)
	if m.ContextID != "" {
		b = append(b, `,"contextId":`...)
		b = wire.AppendString(b, m.ContextID)
	}
	if m.TaskID != "" {
		b = append(b, `,"taskId":`...)
		b = wire.AppendString(b, string(m.TaskID))
	}
	b = append(b, `,"role":`...)
	b = wire.AppendString(b, roleName(m.Role, v))
	b = append(b, `,"parts":`...)
	b = appendParts(b, m.Parts, v)
	if len(m.ReferenceTasks) > 0 {
		b = append(b, `,"referenceTaskIds":[`...)
		for i, id := range m.ReferenceTasks {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendString(b, string(id))
		}
		b = append(b, ']')
	}
	if len(m.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendJSON(b, m.Extensions)
	}
	b = appendMeta(b, m.Metadata)
	return append(b, '}')
}

// AppendStatus appends a TaskStatus.
func AppendStatus(b []byte, s *a2asdk.TaskStatus, v Version) []byte {
	b = append(b, `{"state":`...)
	b = wire.AppendString(b, stateName(s.State, v))
	if s.Message != nil {
		b = append(b, `,"message":`...)
		b = AppendMessage(b, s.Message, v)
	}
	if s.Timestamp != nil {
		b = append(b, `,"timestamp":`...)
		b = appendTime(b, *s.Timestamp)
	}
	return append(b, '}')
}

// AppendArtifact appends an artifact.
func AppendArtifact(b []byte, a *a2asdk.Artifact, v Version) []byte {
	b = append(b, `{"artifactId":`...)
	b = wire.AppendString(b, string(a.ID))
	if a.Name != "" {
		b = append(b, `,"name":`...)
		b = wire.AppendString(b, a.Name)
	}
	if a.Description != "" {
		b = append(b, `,"description":`...)
		b = wire.AppendString(b, a.Description)
	}
	b = append(b, `,"parts":`...)
	b = appendParts(b, a.Parts, v)
	if len(a.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendJSON(b, a.Extensions)
	}
	b = appendMeta(b, a.Metadata)
	return append(b, '}')
}

// AppendTask appends a task. historyLength, when set, keeps only the last
// that many history messages (0: none; 1.0 then leaves history out).
func AppendTask(b []byte, t *a2asdk.Task, v Version, historyLength *int) []byte {
	if v == V03 {
		b = append(b, `{"kind":"task","id":`...)
	} else {
		b = append(b, `{"id":`...)
	}
	b = wire.AppendString(b, string(t.ID))
	b = append(b, `,"contextId":`...)
	b = wire.AppendString(b, t.ContextID)
	b = append(b, `,"status":`...)
	b = AppendStatus(b, &t.Status, v)
	h := t.History
	if historyLength != nil && *historyLength < len(h) {
		h = h[len(h)-*historyLength:]
	}
	if len(h) > 0 || (v == V03 && t.History != nil) {
		b = append(b, `,"history":[`...)
		for i, m := range h {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendMessage(b, m, v)
		}
		b = append(b, ']')
	}
	if len(t.Artifacts) > 0 {
		b = append(b, `,"artifacts":[`...)
		for i, a := range t.Artifacts {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendArtifact(b, a, v)
		}
		b = append(b, ']')
	}
	b = appendMeta(b, t.Metadata)
	return append(b, '}')
}

// appendStatusUpdate appends a status-update event.
func appendStatusUpdate(b []byte, taskID, contextID string, s *a2asdk.TaskStatus, final bool, meta map[string]any, v Version) []byte {
	if v == V03 {
		b = append(b, `{"kind":"status-update","taskId":`...)
	} else {
		b = append(b, `{"statusUpdate":{"taskId":`...)
	}
	b = wire.AppendString(b, taskID)
	b = append(b, `,"contextId":`...)
	b = wire.AppendString(b, contextID)
	b = append(b, `,"status":`...)
	b = AppendStatus(b, s, v)
	if v == V03 {
		b = append(b, `,"final":`...)
		b = strconv.AppendBool(b, final)
	}
	b = appendMeta(b, meta)
	if v == V10 {
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendArtifactHead opens an artifact-update event up to its artifact's
// parts array: the caller writes the parts, then appendArtifactTail.
func appendArtifactHead(b []byte, taskID, contextID, artifactID, name string, v Version) []byte {
	if v == V03 {
		b = append(b, `{"kind":"artifact-update","taskId":`...)
	} else {
		b = append(b, `{"artifactUpdate":{"taskId":`...)
	}
	b = wire.AppendString(b, taskID)
	b = append(b, `,"contextId":`...)
	b = wire.AppendString(b, contextID)
	b = append(b, `,"artifact":{"artifactId":`...)
	b = wire.AppendString(b, artifactID)
	if name != "" {
		b = append(b, `,"name":`...)
		b = wire.AppendString(b, name)
	}
	return append(b, `,"parts":`...)
}

func appendArtifactTail(b []byte, appendChunk, last bool, v Version) []byte {
	b = append(b, '}')
	if v == V03 {
		b = append(b, `,"append":`...)
		b = strconv.AppendBool(b, appendChunk)
		b = append(b, `,"lastChunk":`...)
		b = strconv.AppendBool(b, last)
		return append(b, '}')
	}
	if appendChunk {
		b = append(b, `,"append":true`...)
	}
	if last {
		b = append(b, `,"lastChunk":true`...)
	}
	return append(b, "}}"...)
}

// appendTaskResult appends a Task as the result of a send: 0.3's bare
// task, 1.0's {"task": …} wrapper.
func appendTaskResult(b []byte, t *a2asdk.Task, v Version, historyLength *int) []byte {
	if v == V10 {
		b = append(b, `{"task":`...)
		b = AppendTask(b, t, v, historyLength)
		return append(b, '}')
	}
	return AppendTask(b, t, v, historyLength)
}

// AppendSendResult appends the result of message/send (SendMessage): the
// task, wrapped in {"task": …} in 1.0.
func AppendSendResult(b []byte, t *a2asdk.Task, v Version, historyLength *int) []byte {
	return appendTaskResult(b, t, v, historyLength)
}
