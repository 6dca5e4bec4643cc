package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bridge-dev/bridge/bridge"
)

var (
	_ bridge.Leaser = (*Store)(nil)
	_ bridge.Relay  = (*Store)(nil)
)

// defaultLease is Options.Lease's default.
const defaultLease = 10 * time.Second

// dbNow is the database's clock in unix nanoseconds: leases are measured
// by it, so replicas whose clocks differ agree on when one ended.
const dbNow = `(extract(epoch from clock_timestamp()) * 1e9)::bigint`

// LeaseTTL implements bridge.Leaser.
func (s *Store) LeaseTTL() time.Duration { return s.lease }

// Owner is the name of this process in the leases it holds.
func (s *Store) Owner() string { return s.owner }

// RenewLeases implements bridge.Leaser.
func (s *Store) RenewLeases(ctx context.Context, runs []string) ([]string, error) {
	rows, err := s.db().Query(ctx, `UPDATE runs SET lease_until = `+dbNow+` + $1
		WHERE id = ANY($2) AND owner = $3 AND status = 'running' RETURNING id`, s.lease.Nanoseconds(), runs, s.owner)
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	// Runs that ended (status no longer running) are not lost; only those
	// another process now owns are.
	var maybe []string
	for _, id := range runs {
		if !slices.Contains(held, id) {
			maybe = append(maybe, id)
		}
	}
	if len(maybe) == 0 {
		return nil, nil
	}
	rows, err = s.db().Query(ctx, `SELECT id FROM runs WHERE id = ANY($1) AND owner <> $2 AND status = 'running'`, maybe, s.owner)
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	lost, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	return lost, nil
}

// TakeExpired implements bridge.Leaser: one UPDATE with SKIP LOCKED, so
// replicas that look at once each take different runs.
func (s *Store) TakeExpired(ctx context.Context) ([]*bridge.Run, error) {
	rows, err := s.db().Query(ctx, `UPDATE runs SET owner = $1, lease_until = `+dbNow+` + $2
		WHERE id IN (SELECT id FROM runs WHERE status = 'running' AND lease_until < `+dbNow+`
			ORDER BY created, ord FOR UPDATE SKIP LOCKED)
		RETURNING id`, s.owner, s.lease.Nanoseconds())
	if err != nil {
		return nil, fmt.Errorf("take expired leases: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("take expired leases: %w", err)
	}
	var runs []*bridge.Run
	for _, id := range ids {
		r, err := s.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b *bridge.Run) int { return a.Created.Compare(b.Created) })
	return runs, nil
}

// InterruptRuns implements bridge.Leaser.
func (s *Store) InterruptRuns(ctx context.Context, reason string, now time.Time, runs ...string) ([]string, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	return s.interrupt(ctx, reason, now, func(id string) bool { return slices.Contains(runs, id) })
}

// releasedKey is the key of the watch (watch.go) that ReleaseLeases
// notifies: a payload no run id has, as commandKey's.
const releasedKey = "!released"

// ReleaseLeases implements bridge.Leaser: the runs' leases end now (their
// owner stays this process until another takes them), with a notification
// that wakes the other processes' takeover (WatchReleases), in one
// transaction.
func (s *Store) ReleaseLeases(ctx context.Context, runs []string) ([]string, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	var released []string
	err := s.write(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE runs SET lease_until = `+dbNow+` - 1
			WHERE id = ANY($1) AND owner = $2 AND status = 'running' RETURNING id`, runs, s.owner)
		if err != nil {
			return err
		}
		if released, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(released) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, releasedKey)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("release leases: %w", err)
	}
	return released, nil
}

// WatchReleases implements bridge.Leaser. Its channel also receives when
// the listener reconnected (a release may have gone unsignalled).
func (s *Store) WatchReleases() (<-chan struct{}, func()) { return s.WatchRun(releasedKey) }

// commandPoll bounds how long a relayed command or its answer waits for a
// notification before the table is read again (one lost to a reconnect).
const commandPoll = 250 * time.Millisecond

// Keys of the watch (watch.go) for commands to a process and answers to a
// command: notifications on the same channel as events, with payloads no
// run id has.
func commandKey(owner string) string { return "!cmd:" + owner }
func answerKey(id int64) string      { return "!ans:" + strconv.FormatInt(id, 10) }

// Relay implements bridge.Relay: the command goes into run_commands for
// the run's owner, who is notified; the answer comes back the same way.
func (s *Store) Relay(ctx context.Context, cmd bridge.Command) (*bridge.Answer, error) {
	var owner string
	var live bool
	err := s.db().QueryRow(ctx, `SELECT owner, lease_until > `+dbNow+` FROM runs WHERE id = $1`, cmd.Run).Scan(&owner, &live)
	if err == pgx.ErrNoRows {
		return nil, bridge.Errorf(bridge.CodeNotFound, "run %q not found", cmd.Run)
	}
	if err != nil {
		return nil, fmt.Errorf("relay %s: %w", cmd.Kind, err)
	}
	if !live {
		return nil, &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: s.lease,
			Message: fmt.Sprintf("the replica that ran run %s is gone; another takes it over within %s", cmd.Run, s.lease)}
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	var id int64
	err = s.write(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO run_commands (owner, body, created) VALUES ($1, $2, $3) RETURNING id`,
			owner, string(body), time.Now().UnixNano()).Scan(&id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, commandKey(owner))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("relay %s: %w", cmd.Kind, err)
	}
	defer s.db().Exec(context.WithoutCancel(ctx), `DELETE FROM run_commands WHERE id = $1`, id)
	wake, stop := s.WatchRun(answerKey(id))
	defer stop()
	poll := time.NewTicker(commandPoll)
	defer poll.Stop()
	for {
		var answer *string
		if err := s.db().QueryRow(ctx, `SELECT answer FROM run_commands WHERE id = $1`, id).Scan(&answer); err != nil {
			if ctx.Err() != nil {
				break
			}
			return nil, fmt.Errorf("relay %s: %w", cmd.Kind, err)
		}
		if answer != nil {
			var a bridge.Answer
			if err := json.Unmarshal([]byte(*answer), &a); err != nil {
				return nil, fmt.Errorf("relay %s: answer: %w", cmd.Kind, err)
			}
			return &a, nil
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, &bridge.Error{Code: bridge.CodeUnavailable, RetryAfter: time.Second,
		Message: fmt.Sprintf("the replica that runs run %s did not answer the %s in time", cmd.Run, cmd.Kind)}
}

// ServeRelay implements bridge.Relay.
func (s *Store) ServeRelay(ctx context.Context, handle func(context.Context, bridge.Command) bridge.Answer) {
	wake, stop := s.WatchRun(commandKey(s.owner))
	defer stop()
	poll := time.NewTicker(commandPoll)
	defer poll.Stop()
	for ctx.Err() == nil {
		rows, err := s.db().Query(ctx, `UPDATE run_commands SET taken = true
			WHERE owner = $1 AND NOT taken RETURNING id, body`, s.owner)
		var taken []struct {
			id   int64
			body string
		}
		if err == nil {
			for rows.Next() {
				var c struct {
					id   int64
					body string
				}
				if rows.Scan(&c.id, &c.body) == nil {
					taken = append(taken, c)
				}
			}
			rows.Close()
		}
		for _, c := range taken {
			go s.answer(ctx, c.id, c.body, handle)
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-ctx.Done():
		}
	}
}

// answer carries out one relayed command and stores its answer.
func (s *Store) answer(ctx context.Context, id int64, body string, handle func(context.Context, bridge.Command) bridge.Answer) {
	var cmd bridge.Command
	var a bridge.Answer
	if err := json.Unmarshal([]byte(body), &cmd); err != nil {
		a.Error = bridge.Errorf(bridge.CodeInternal, "a relayed command this bridge cannot read")
	} else {
		a = handle(ctx, cmd)
	}
	out, err := json.Marshal(a)
	if err != nil {
		return
	}
	wctx := context.WithoutCancel(ctx)
	_ = s.write(wctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(wctx, `UPDATE run_commands SET answer = $2 WHERE id = $1`, id, string(out)); err != nil {
			return err
		}
		_, err := tx.Exec(wctx, `SELECT pg_notify($1, $2)`, channel, answerKey(id))
		return err
	})
}

var _ bridge.RunCounter = (*Store)(nil)

// RunningRuns implements bridge.RunCounter: principal's running runs whose
// lease has not ended, on every replica.
func (s *Store) RunningRuns(ctx context.Context, principal string) (int, error) {
	var n int
	err := s.db().QueryRow(ctx, `SELECT count(*) FROM runs WHERE principal = $1 AND status = $2 AND lease_until > `+dbNow,
		principal, string(bridge.StatusRunning)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count running runs: %w", err)
	}
	return n, nil
}
