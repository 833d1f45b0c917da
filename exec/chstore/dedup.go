package chstore

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Deduplication is what a table's engine does with an insert it has seen
// before: a MergeTree remembers the hashes of its last Window inserted
// blocks (non_replicated_deduplication_window; a ReplicatedMergeTree's
// replicated_deduplication_window) and drops a block that repeats one of
// them, so a retried insert lands once. With a window of 0 every repeat is
// kept, and shows in the table as rows written twice.
type Deduplication struct {
	// Engine is the table's engine ("MergeTree").
	Engine string
	// Setting is the setting that sizes the window, "" for an engine
	// that never deduplicates.
	Setting string
	// Window is the inserts remembered; 0 for none.
	Window uint64
}

// String says it in a line, for a record.
func (d Deduplication) String() string {
	switch {
	case d.Setting == "":
		return d.Engine + ", which never deduplicates: every repeated insert is kept"
	case d.Window == 0:
		return fmt.Sprintf("%s with %s = 0: every repeated insert is kept", d.Engine, d.Setting)
	}
	return fmt.Sprintf("%s with %s = %d: an insert repeating one of the last %d is absorbed", d.Engine, d.Setting, d.Window, d.Window)
}

// dedupSetting is the setting that sizes engine's deduplication window.
func dedupSetting(engine string) string {
	switch {
	case strings.HasPrefix(engine, "Replicated") && strings.HasSuffix(engine, "MergeTree"):
		return "replicated_deduplication_window"
	case strings.HasSuffix(engine, "MergeTree"):
		return "non_replicated_deduplication_window"
	}
	return ""
}

// settingIn reads setting from a table's engine_full, where a SETTINGS
// clause gives what differs from the server's default.
func settingIn(engineFull, setting string) (uint64, bool) {
	m := regexp.MustCompile(`\b` + setting + `\s*=\s*(\d+)`).FindStringSubmatch(engineFull)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	return n, err == nil
}

// Engine answers the table's engine and engine_full, one row (none when
// there is no such table).
func (q TableSQL) Engine() string {
	db, name := "currentDatabase()", q.table
	if d, n, ok := strings.Cut(q.table, "."); ok {
		db, name = "'"+d+"'", n
	}
	return "SELECT engine, engine_full FROM system.tables WHERE database = " + db + " AND name = '" + name + "'"
}

// MergeTreeDefault answers the server's default of a MergeTree setting as
// text, one row (none on a server that has no such setting: ClickHouse
// 18.16 has no non_replicated_deduplication_window, and no MergeTree there
// deduplicates without replication).
func MergeTreeDefault(setting string) string {
	return "SELECT value FROM system.merge_tree_settings WHERE name = '" + setting + "'"
}

// DuplicatedInsertedBlocks answers the server's DuplicatedInsertedBlocks
// profile event: how often its MergeTree tables have dropped an inserted
// block as a repeat since it started (0 before the first). It counts in
// ClickHouse's own unit: 26.9 adds 2 for one repeated insert into one
// partition (measured with chDB), so it says whether, and how much, a
// table's deduplication absorbed, not how many rows.
const DuplicatedInsertedBlocks = "SELECT toUInt64(sum(value)) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'"

// Deduplication reads what table does with a repeated insert.
func (s *Store) Deduplication(ctx context.Context, table string) (Deduplication, error) {
	q, err := SQLFor(table)
	if err != nil {
		return Deduplication{}, err
	}
	var engine, full string
	if err := s.conn.QueryRow(ctx, q.Engine()).Scan(&engine, &full); err != nil {
		return Deduplication{}, fmt.Errorf("reading the engine of %s on ClickHouse at %s: %w", table, s.addr, err)
	}
	return ReadDeduplication(engine, full, func(setting string) (string, bool, error) {
		rows, err := s.conn.Query(ctx, MergeTreeDefault(setting))
		if err != nil {
			return "", false, fmt.Errorf("reading the server's default %s on ClickHouse at %s: %w", setting, s.addr, err)
		}
		defer rows.Close()
		var v string
		if !rows.Next() {
			return "", false, rows.Err()
		}
		if err := rows.Scan(&v); err != nil {
			return "", false, fmt.Errorf("reading the server's default %s on ClickHouse at %s: %w", setting, s.addr, err)
		}
		return v, true, nil
	})
}

// ReadDeduplication is a table's deduplication from its engine and
// engine_full (Engine's answer) and, where engine_full does not set the
// window, the server's default (MergeTreeDefault's answer, ok false when
// the server has no such setting).
func ReadDeduplication(engine, full string, serverDefault func(setting string) (v string, ok bool, err error)) (Deduplication, error) {
	d := Deduplication{Engine: engine, Setting: dedupSetting(engine)}
	if d.Setting == "" {
		return d, nil
	}
	if n, ok := settingIn(full, d.Setting); ok {
		d.Window = n
		return d, nil
	}
	v, ok, err := serverDefault(d.Setting)
	if err != nil || !ok {
		return d, err
	}
	if d.Window, err = strconv.ParseUint(v, 10, 64); err != nil {
		return d, fmt.Errorf("the server's default %s is %q, not a count", d.Setting, v)
	}
	return d, nil
}

// Absorbed reads the server's DuplicatedInsertedBlocks event.
func (s *Store) Absorbed(ctx context.Context) (uint64, error) {
	var n uint64
	if err := s.conn.QueryRow(ctx, DuplicatedInsertedBlocks).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the inserts deduplicated on ClickHouse at %s: %w", s.addr, err)
	}
	return n, nil
}
