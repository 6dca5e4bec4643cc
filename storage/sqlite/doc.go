// Package sqlite implements bridge.Store on a SQLite database file.
//
// The database runs in WAL mode. All writes go through one connection, so
// they queue in the process instead of failing with SQLITE_BUSY, while reads
// use a pool of their own connections and never wait for a writer. The schema
// is created and upgraded by the versioned migrations embedded from
// migrations/*.sql, applied by Open.
//
// Times are stored as unix nanoseconds and read back in UTC; the zero
// time.Time is stored as 0.
//
// This is the only package that holds SQL.
package sqlite
