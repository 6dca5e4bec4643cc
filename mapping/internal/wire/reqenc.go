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

// NewRequestEncoding starts encoding req in dialect.
func NewRequestEncoding(req *bridge.Request, dialect string) RequestEncoding {
	return RequestEncoding{Req: req, Same: req.ExtraDialect == dialect}
}

// Result is the encoder's answer: the body it wrote with what it dropped,
// or its error alone.
func (e *RequestEncoding) Result(body []byte, err error) ([]byte, []string, error) {
	if err != nil {
		return nil, nil, err
	}
	return body, e.Dropped, nil
}
