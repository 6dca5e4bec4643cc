package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/bridge-dev/bridge/bridge"
)

type respKey struct{ principal, id string }

// cloneResponse copies r (its JSON fields too, so no caller shares memory
// with the store).
func cloneResponse(r *bridge.StoredResponse) *bridge.StoredResponse {
	c := *r
	c.Created = utc(c.Created)
	c.Echo, c.Input, c.Output = cloneRaw(c.Echo), cloneRaw(c.Input), cloneRaw(c.Output)
	return &c
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

func respNotFound(id string) error {
	return bridge.Errorf(bridge.CodeNotFound, "no stored response %q", id)
}

// PutResponse inserts r; CodeConflict if its principal has one of its id.
func (s *Store) PutResponse(_ context.Context, r *bridge.StoredResponse) error {
	if r.ID == "" {
		return bridge.Errorf(bridge.CodeInvalid, "put response: empty id")
	}
	return s.write(func() error {
		k := respKey{r.Principal, r.ID}
		if _, ok := s.resps[k]; ok {
			return bridge.Errorf(bridge.CodeConflict, "response %q exists", r.ID)
		}
		s.resps[k] = cloneResponse(r)
		return nil
	})
}

func (s *Store) Response(_ context.Context, principal, id string) (*bridge.StoredResponse, error) {
	var out *bridge.StoredResponse
	err := s.read(func() error {
		r, ok := s.resps[respKey{principal, id}]
		if !ok {
			return respNotFound(id)
		}
		out = cloneResponse(r)
		return nil
	})
	return out, err
}

func (s *Store) RunResponses(_ context.Context, principal, run string) ([]*bridge.StoredResponse, error) {
	var out []*bridge.StoredResponse
	err := s.read(func() error {
		for _, r := range s.resps {
			if r.Principal == principal && r.RunID == run {
				out = append(out, cloneResponse(r))
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b *bridge.StoredResponse) int {
		return cmp.Or(cmp.Compare(a.After, b.After), cmp.Compare(a.ID, b.ID))
	})
	return out, err
}

// update applies fn to principal's response id under the write lock.
func (s *Store) updateResponse(principal, id string, fn func(r *bridge.StoredResponse)) error {
	return s.write(func() error {
		r, ok := s.resps[respKey{principal, id}]
		if !ok {
			return respNotFound(id)
		}
		fn(r)
		return nil
	})
}

func (s *Store) FinishResponse(_ context.Context, principal, id string, output json.RawMessage) error {
	output = cloneRaw(output)
	return s.updateResponse(principal, id, func(r *bridge.StoredResponse) { r.Output = output })
}

func (s *Store) DeleteResponse(_ context.Context, principal, id string) error {
	return s.updateResponse(principal, id, func(r *bridge.StoredResponse) {
		r.Deleted, r.Input, r.Output, r.Echo = true, nil, nil, nil
	})
}

func (s *Store) EndResponses(_ context.Context, principal, session string, end int64) error {
	return s.write(func() error {
		for _, r := range s.resps {
			if r.Principal == principal && r.SessionID == session && r.End == 0 {
				r.End = end
			}
		}
		return nil
	})
}
