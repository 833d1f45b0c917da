package chstore

import (
	"testing"
)

// TestDeduplicationOnTheHostsServer: ClickHouse 18.16 has no MergeTree
// deduplication without replication, so the corpus table keeps a repeated
// insert (rows written twice) and the server counts no block absorbed.
func TestDeduplicationOnTheHostsServer(t *testing.T) {
	s := openTestStore(t)
	table := newTable(t, s)
	d, err := s.Deduplication(testCtx(t), table)
	if err != nil {
		t.Fatal(err)
	}
	if d.Engine != "MergeTree" || d.Setting != "non_replicated_deduplication_window" || d.Window != 0 {
		t.Fatalf("deduplication %+v; want MergeTree with non_replicated_deduplication_window 0", d)
	}
	if got, want := d.String(), "MergeTree with non_replicated_deduplication_window = 0: every repeated insert is kept"; got != want {
		t.Errorf("said %q; want %q", got, want)
	}
	before, err := s.Absorbed(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	insertMessages(t, s, table, 0, 10)
	insertMessages(t, s, table, 0, 10)
	after, err := s.Absorbed(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	count, distinct, err := s.Counts(testCtx(t), table, "id")
	if err != nil {
		t.Fatal(err)
	}
	if count != 2*distinct || after != before {
		t.Errorf("the same insert twice: %d rows, %d distinct, %d blocks absorbed; want every row twice and none absorbed", count, distinct, after-before)
	}
}

// TestReadDeduplication: the window a table's SETTINGS clause gives wins
// over the server's default; a server without the setting has none; an
// engine outside the MergeTree family never deduplicates.
func TestReadDeduplication(t *testing.T) {
	def := func(v string, ok bool) func(string) (string, bool, error) {
		return func(string) (string, bool, error) { return v, ok, nil }
	}
	for _, tc := range []struct {
		engine, full string
		def          func(string) (string, bool, error)
		want         Deduplication
	}{
		{"MergeTree", "MergeTree ORDER BY id SETTINGS index_granularity = 8192, non_replicated_deduplication_window = 1000", def("0", true),
			Deduplication{"MergeTree", "non_replicated_deduplication_window", 1000}},
		{"MergeTree", "MergeTree ORDER BY id SETTINGS index_granularity = 8192", def("0", true),
			Deduplication{"MergeTree", "non_replicated_deduplication_window", 0}},
		{"MergeTree", "MergeTree ORDER BY id SETTINGS index_granularity = 8192", def("", false),
			Deduplication{"MergeTree", "non_replicated_deduplication_window", 0}},
		{"ReplicatedMergeTree", "ReplicatedMergeTree('/t', 'r') ORDER BY id", def("1000", true),
			Deduplication{"ReplicatedMergeTree", "replicated_deduplication_window", 1000}},
		{"Memory", "Memory", def("9", true), Deduplication{Engine: "Memory"}},
	} {
		got, err := ReadDeduplication(tc.engine, tc.full, tc.def)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.full, got, err, tc.want)
		}
	}
	if _, err := ReadDeduplication("MergeTree", "MergeTree ORDER BY id", def("many", true)); err == nil {
		t.Error("a default that is not a count was taken")
	}
}
