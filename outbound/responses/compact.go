package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/bridge-dev/bridge/bridge"
	wire "github.com/bridge-dev/bridge/mapping/responses"
)

// maxCompaction bounds the upstream's compaction object read.
const maxCompaction = 64 << 20

// Compact asks the upstream's POST {base}/responses/compact to compact
// req's conversation (its input items and instructions as EncodeRequest
// renders them) and returns the upstream's answer, a response.compaction
// object whose compaction item is the upstream's own, as it came. An
// upstream without compaction (404, 405) is CodeUnsupported; any other
// failure is as Open's.
func (c *Client) Compact(ctx context.Context, req *bridge.Request) ([]byte, error) {
	if c.cfg.Model != "" {
		r := *req
		r.Model = c.cfg.Model
		req = &r
	}
	full, _, err := wire.EncodeRequest(req, wire.EncodeOptions{})
	if err != nil {
		return nil, err
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(full, &v); err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "compact: %v", err)
	}
	body := map[string]json.RawMessage{"model": v["model"], "input": v["input"]}
	if in, ok := v["instructions"]; ok {
		body["instructions"] = in
	}
	b, _ := json.Marshal(body)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/compact", bytes.NewReader(b))
	if err != nil {
		return nil, bridge.Errorf(bridge.CodeInternal, "upstream %s: bad base URL", c.cfg.Name)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.sender.Do(hreq)
	if err != nil {
		if e := bridge.AsError(err); e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed {
			return nil, bridge.Errorf(bridge.CodeUnsupported, "upstream %s has no /responses/compact", c.cfg.Name)
		}
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxCompaction+1))
	switch {
	case err != nil:
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s: the compaction could not be read", c.cfg.Name)
	case len(out) > maxCompaction:
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s: the compaction is over %d bytes", c.cfg.Name, maxCompaction)
	case !json.Valid(out):
		return nil, bridge.Errorf(bridge.CodeUpstream, "upstream %s: the compaction is not JSON", c.cfg.Name)
	}
	return out, nil
}
