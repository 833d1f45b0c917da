// Package chstore is spatec's side of ClickHouse: it creates the arm's
// table, empties it between repetitions, watches the rows an arm lands
// until the distinct ids reach the expected count, and measures the
// server's native ingest ceiling.
//
// It speaks the native protocol only (clickhouse-go v2): the oldest server
// spatec supports, 18.16, rejects the settings the driver sends over HTTP.
// Inserts always name their columns, which that server needs for native
// batches.
package chstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"spatec.dev/spatec/workloads/json-rows"
)

// Store is a pool of native connections to one ClickHouse database.
type Store struct {
	conn     driver.Conn
	addr     string
	database string
	maxConns int
}

// Option adjusts Open.
type Option func(*clickhouse.Options)

// WithMaxConns sets how many connections the pool opens at most; concurrent
// inserts need one each. The default is 16.
func WithMaxConns(n int) Option {
	return func(o *clickhouse.Options) {
		o.MaxOpenConns = n
		o.MaxIdleConns = n
	}
}

// WithLZ4 compresses blocks on the wire, as clickhouse-client does by
// default. Off by default: on loopback it costs CPU on both sides and saves
// nothing.
func WithLZ4() Option {
	return func(o *clickhouse.Options) {
		o.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	}
}

// codeUnknownDatabase is ClickHouse's error code for a missing database.
const codeUnknownDatabase = 81

// Open connects to database on the server at addr (host:port of the native
// protocol), creating the database when it is missing: a fresh server has
// only "default", and spatec owns the database its plans name.
func Open(ctx context.Context, addr, database, user, password string, opts ...Option) (*Store, error) {
	if !identRE.MatchString(database) {
		return nil, fmt.Errorf("opening ClickHouse at %s: database name %q is not a plain identifier (letters, digits, underscore)", addr, database)
	}
	options := func(db string) *clickhouse.Options {
		o := &clickhouse.Options{
			Addr:         []string{addr},
			Auth:         clickhouse.Auth{Database: db, Username: user, Password: password},
			DialTimeout:  5 * time.Second,
			MaxOpenConns: 16,
			MaxIdleConns: 16,
		}
		for _, opt := range opts {
			opt(o)
		}
		return o
	}
	conn, err := clickhouse.Open(options(database))
	if err != nil {
		return nil, fmt.Errorf("opening ClickHouse at %s: %w", addr, err)
	}
	err = conn.Ping(ctx)
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == codeUnknownDatabase {
		conn.Close()
		if err := createDatabase(ctx, options("default"), database); err != nil {
			return nil, fmt.Errorf("opening ClickHouse at %s: %w", addr, err)
		}
		if conn, err = clickhouse.Open(options(database)); err != nil {
			return nil, fmt.Errorf("opening ClickHouse at %s: %w", addr, err)
		}
		err = conn.Ping(ctx)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connecting to ClickHouse at %s (database %s, user %q): %w", addr, database, user, err)
	}
	return &Store{conn: conn, addr: addr, database: database, maxConns: options(database).MaxOpenConns}, nil
}

func createDatabase(ctx context.Context, o *clickhouse.Options, database string) error {
	conn, err := clickhouse.Open(o)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Exec(ctx, CreateDatabase(database)); err != nil {
		return fmt.Errorf("creating database %s: %w", database, err)
	}
	return nil
}

// Close closes the pool.
func (s *Store) Close() error { return s.conn.Close() }

// Database is the database the store's unqualified table names live in.
func (s *Store) Database() string { return s.database }

// Exec runs one statement (DDL such as the arm's CREATE TABLE).
func (s *Store) Exec(ctx context.Context, stmt string) error {
	if err := s.conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("ClickHouse at %s: running %q: %w", s.addr, abbreviate(stmt), err)
	}
	return nil
}

// DefaultDDL is a CREATE TABLE for corpus rows that ClickHouse 18.16 and
// later accept (DateTime, no DateTime64 or LowCardinality). table may be
// qualified with its database.
func DefaultDDL(table string) string {
	return "CREATE TABLE IF NOT EXISTS " + table + ` (
    id UInt64,
    ts DateTime,
    user_id UInt32,
    kind String,
    value Int64,
    payload String
) ENGINE = MergeTree ORDER BY id`
}

// identRE matches the table names spatec accepts: an identifier, optionally
// qualified by a database. Names are spliced into SQL, so nothing else.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
var tableRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*\.)?[A-Za-z_][A-Za-z0-9_]*$`)

func checkTable(table string) error {
	if !tableRE.MatchString(table) {
		return fmt.Errorf("table name %q is not an identifier or database.identifier (letters, digits, underscore)", table)
	}
	return nil
}

// Truncate empties table, between repetitions of a run.
func (s *Store) Truncate(ctx context.Context, table string) error {
	q, err := SQLFor(table)
	if err != nil {
		return err
	}
	return s.Exec(ctx, q.Truncate())
}

// DropTable drops table if it exists.
func (s *Store) DropTable(ctx context.Context, table string) error {
	q, err := SQLFor(table)
	if err != nil {
		return err
	}
	return s.Exec(ctx, q.Drop())
}

// Definition returns table's CREATE statement as the server shows it, or
// "" when there is no such table.
func (s *Store) Definition(ctx context.Context, table string) (string, error) {
	q, err := SQLFor(table)
	if err != nil {
		return "", err
	}
	var exists uint8
	if err := s.conn.QueryRow(ctx, q.Exists()).Scan(&exists); err != nil {
		return "", fmt.Errorf("asking ClickHouse at %s whether %s exists: %w", s.addr, table, err)
	}
	if exists == 0 {
		return "", nil
	}
	var ddl string
	if err := s.conn.QueryRow(ctx, q.ShowCreate()).Scan(&ddl); err != nil {
		return "", fmt.Errorf("reading the definition of %s on ClickHouse at %s: %w", table, s.addr, err)
	}
	return ddl, nil
}

// Count returns the number of rows in table. On MergeTree it is read from
// part metadata, cheap enough to poll while an arm inserts.
func (s *Store) Count(ctx context.Context, table string) (uint64, error) {
	q, err := SQLFor(table)
	if err != nil {
		return 0, err
	}
	var n uint64
	if err := s.conn.QueryRow(ctx, q.Count()).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting rows of %s on ClickHouse at %s: %w", table, s.addr, err)
	}
	return n, nil
}

// Counts returns the rows in table and the distinct row identities among
// them: uniqExact of identity, an SQL expression such as "id" or
// "(batch_id, event_seq)", exact at any size. count − distinct are
// duplicates.
func (s *Store) Counts(ctx context.Context, table, identity string) (count, distinct uint64, err error) {
	q, err := SQLFor(table)
	if err != nil {
		return 0, 0, err
	}
	err = s.conn.QueryRow(ctx, q.Counts(identity)).Scan(&count, &distinct)
	if err != nil {
		return 0, 0, fmt.Errorf("counting rows and distinct identities %s of %s on ClickHouse at %s: %w", identity, table, s.addr, err)
	}
	return count, distinct, nil
}

// Rows is a columnar buffer of corpus events: the shape a native insert
// sends, so a batch is appended column by column without per-row work in
// the driver.
type Rows struct {
	ID      []uint64
	TS      []int64 // Unix seconds
	UserID  []uint32
	Kind    []string
	Value   []int64
	Payload []string
}

// Add appends one event.
func (r *Rows) Add(e jsonrows.Event) {
	r.ID = append(r.ID, e.ID)
	r.TS = append(r.TS, int64(e.TS))
	r.UserID = append(r.UserID, e.UserID)
	r.Kind = append(r.Kind, e.Kind)
	r.Value = append(r.Value, e.Value)
	r.Payload = append(r.Payload, e.Payload)
}

// Len is the number of rows buffered.
func (r *Rows) Len() int { return len(r.ID) }

// Reset empties the buffer, keeping its storage.
func (r *Rows) Reset() {
	r.ID, r.TS, r.UserID = r.ID[:0], r.TS[:0], r.UserID[:0]
	r.Kind, r.Value, r.Payload = r.Kind[:0], r.Value[:0], r.Payload[:0]
}

// AppendMessages adds the events of messages [first, first+n) of spec.
func (r *Rows) AppendMessages(spec jsonrows.Spec, first, n int64) error {
	var evs []jsonrows.Event
	for i := first; i < first+n; i++ {
		var err error
		if evs, err = spec.AppendEvents(evs[:0], i); err != nil {
			return err
		}
		for _, e := range evs {
			r.Add(e)
		}
	}
	return nil
}

// Insert sends rows to table as one native block.
func (s *Store) Insert(ctx context.Context, table string, rows *Rows) error {
	q, err := SQLFor(table)
	if err != nil {
		return err
	}
	batch, err := s.conn.PrepareBatch(ctx, q.Insert(jsonrows.Columns))
	if err != nil {
		return fmt.Errorf("preparing an insert into %s on ClickHouse at %s: %w", table, s.addr, err)
	}
	for i, col := range []any{rows.ID, rows.TS, rows.UserID, rows.Kind, rows.Value, rows.Payload} {
		if err := batch.Column(i).Append(col); err != nil {
			batch.Abort()
			return fmt.Errorf("appending column %d of an insert into %s: %w", i, table, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("inserting %d rows into %s on ClickHouse at %s: %w", rows.Len(), table, s.addr, err)
	}
	return nil
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
