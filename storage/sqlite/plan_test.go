package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestClientIDIndexUsed: RunByClientID's query is one the partial index
// runs_by_client_id (client_run_id <> ”) serves, not a scan of every run.
func TestClientIDIndexUsed(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "bridge.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+runByClientIDQuery, "p", "c1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "runs_by_client_id") {
		t.Errorf("the client run id lookup does not use its index:\n%s", plan.String())
	}
}
