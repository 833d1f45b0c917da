package chstore

import (
	"maps"
	"slices"

	"spatec.dev/spatec/schema"
)

// TableSQL builds the statements a Store sends about one table. The
// Store's methods send exactly these, so that a test can run them on a
// ClickHouse the Store does not reach: chDB, ClickHouse's current engine
// in process, which has no native endpoint.
type TableSQL struct{ table string }

// SQLFor returns the statements about table, an identifier or
// database.identifier (names are spliced into SQL, so nothing else).
func SQLFor(table string) (TableSQL, error) {
	if err := checkTable(table); err != nil {
		return TableSQL{}, err
	}
	return TableSQL{table}, nil
}

// CreateDatabase makes database, which Open does when it is missing.
func CreateDatabase(database string) string { return "CREATE DATABASE IF NOT EXISTS " + database }

// DropDatabase drops database and its tables, if it exists.
func DropDatabase(database string) string { return "DROP DATABASE IF EXISTS " + database }

// Exists answers 1 when the table exists, else 0.
func (q TableSQL) Exists() string { return "EXISTS TABLE " + q.table }

// ShowCreate answers the table's CREATE statement as the server shows it.
func (q TableSQL) ShowCreate() string { return "SHOW CREATE TABLE " + q.table }

// Drop drops the table if it exists.
func (q TableSQL) Drop() string { return "DROP TABLE IF EXISTS " + q.table }

// Truncate empties the table.
func (q TableSQL) Truncate() string { return "TRUNCATE TABLE " + q.table }

// Count answers the table's rows, count(): a MergeTree reads it from part
// metadata.
func (q TableSQL) Count() string { return "SELECT count() FROM " + q.table }

// Counts answers the rows and the distinct values of identity, an SQL
// expression: uniqExact, exact at any size.
func (q TableSQL) Counts(identity string) string {
	return "SELECT count(), uniqExact(" + identity + ") FROM " + q.table
}

// Insert is an insert into columns (a comma-separated list), whose rows a
// native insert sends as blocks after it.
func (q TableSQL) Insert(columns string) string {
	return "INSERT INTO " + q.table + " (" + columns + ")"
}

// Checksum is the queries Checksum sends, in order: one per o.PerQuery
// messages. Each answers one row of UInt64 columns, which Checksum.Add
// reads.
func (q TableSQL) Checksum(sums []SumSpec, o ChecksumOptions) []string {
	var out []string
	per := max(o.PerQuery, 1)
	for lo := int64(0); lo < max(o.Messages, 1); lo += per {
		out = append(out, checksumQuery(q.table, sums, o, lo, lo+per))
	}
	return out
}

// WorkloadChecksum is the checksum wl declares, as the gates read it over
// messages messages: its sums in the order of their names, over every row
// in one query, or, when distinct (the table holds duplicates), over the
// distinct rows with at most maxRows rows a query.
func WorkloadChecksum(wl schema.Workload, messages int64, distinct bool, maxRows int64) ([]SumSpec, ChecksumOptions) {
	var sums []SumSpec
	for _, n := range slices.Sorted(maps.Keys(wl.Checksum)) {
		sums = append(sums, SumSpec{Name: n, SQL: wl.Checksum[n].SQL, Fingerprint: wl.Checksum[n].Kind == "fingerprint"})
	}
	o := ChecksumOptions{Identity: wl.Table.Identity, Message: wl.Table.Message, Messages: messages, PerQuery: messages, Distinct: distinct}
	if distinct {
		o.PerQuery = max(maxRows/int64(max(wl.RowsPerMessage, 1)), 1)
	}
	return sums, o
}
