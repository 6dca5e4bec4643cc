package sqlite_test

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/bridge"
	"github.com/bridge-dev/bridge/storage/sqlite"
)

// TestWALStaysBounded: under writes that never pause, the WAL still starts
// over, again and again, so its file stays bounded however long the load
// lasts. (A passive checkpoint alone never catches up with such writes: the
// WAL then grew by every page every commit wrote, 1 GB in 3,000 of these.)
func TestWALStaysBounded(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bridge.db")
	s := MustOpen(t, path, sqlite.Options{})
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	const runs = 50
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = "run_wal_" + strconv.Itoa(i)
		if err := s.CreateRun(ctx, &bridge.Run{ID: ids[i], Status: bridge.StatusRunning, Created: t0}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Each batch writes a delta to every run: a page of the events tree
	// each, tens of WAL frames a commit.
	batch := &bridge.Batch{Events: make([]bridge.Event, runs)}
	// At least 1,500 commits and six of the checkpointer's ticks, at most
	// 20,000 commits.
	first := walCheckpointSeq(t, path)
	var peak int64
	start := time.Now()
	commits := int64(0)
	for seq := int64(1); seq <= 20000 && (seq <= 1500 || time.Since(start) < 1500*time.Millisecond); seq++ {
		commits = seq
		for i, id := range ids {
			batch.Events[i] = bridge.Event{RunID: id, Seq: seq, Kind: bridge.KindTextDelta, Source: bridge.SourceModel,
				Text: " token", Time: t0.Add(time.Duration(seq) * time.Microsecond)}
		}
		if err := s.Commit(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			peak = max(peak, fi.Size())
		}
	}
	restarts := walCheckpointSeq(t, path) - first
	t.Logf("%d commits: the WAL started over %d times, its file at most %d bytes", commits, restarts, peak)
	if restarts < 2 {
		t.Errorf("the WAL started over %d times under steady writes (its file grew to %d bytes), want it to keep starting over", restarts, peak)
	}
}

// walCheckpointSeq reads the checkpoint sequence number of the WAL header
// (bytes 12-15, big-endian), which goes up by one each time the WAL starts
// over from its first frame.
func walCheckpointSeq(t *testing.T, db string) uint32 {
	t.Helper()
	f, err := os.Open(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [32]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(hdr[12:16])
}
