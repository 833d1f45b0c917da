package chdb_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/chdb"
	"spatec.dev/spatec/internal/testenv"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestSplit(t *testing.T) {
	script := `-- a comment; with a semicolon
CREATE TABLE a (s String DEFAULT 'x;y', "q;" UInt8, ` + "`b;`" + ` UInt8) ENGINE = Null;
/* a block; comment */
INSERT INTO a VALUES ('it''s; \'here\'', 1, 2);

SELECT 1 -- trailing; comment
;
-- only a comment;
`
	got, err := chdb.Split(script)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-- a comment; with a semicolon\nCREATE TABLE a (s String DEFAULT 'x;y', \"q;\" UInt8, `b;` UInt8) ENGINE = Null",
		"/* a block; comment */\nINSERT INTO a VALUES ('it''s; \\'here\\'', 1, 2)",
		"SELECT 1 -- trailing; comment",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Split gave %q\nwant %q", got, want)
	}
	if _, err := chdb.Split("SELECT 'open"); err == nil {
		t.Error("an unclosed string split without error")
	}
}

// The session is a current ClickHouse with the Kafka engine, keeps its
// state from one Run to the next, returns rows exactly (64-bit integers
// whole), and returns ClickHouse's own error for a failed statement, after
// which it goes on answering cleanly.
func TestSessionRunsStatements(t *testing.T) {
	s := testenv.ChDB(t, chdb.Options{})
	if !strings.HasPrefix(s.Version, "26.") {
		t.Errorf("chDB's engine is %s; requirements.txt pins a 26.x", s.Version)
	}
	res, err := s.Run(ctx(t),
		"SELECT name FROM system.table_engines WHERE name = 'Kafka'",
		"CREATE TABLE t (id UInt64, s String) ENGINE = MergeTree ORDER BY id",
		"INSERT INTO t VALUES (18446744073709551615, 'a'), (1, 'b')",
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || len(res[0].Rows) != 1 || len(res[1].Columns) != 0 {
		t.Fatalf("results %+v", res)
	}
	r, err := s.Query(ctx(t), "SELECT max(id), count() FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := r.Uint64(0, 0); err != nil || m != 1<<64-1 {
		t.Errorf("max(id) = %d (%v); want 2^64-1", m, err)
	}
	if r.Columns[1] != (chdb.Column{Name: "count()", Type: "UInt64"}) {
		t.Errorf("columns %+v", r.Columns)
	}

	// A statement that fails after it began to answer, then one that
	// fails to parse: each error is ClickHouse's, and the statement after
	// each answers alone.
	res, err = s.Run(ctx(t), "SELECT 1", "SELECT throwIf(number = 3) FROM numbers(10)", "SELECT 2")
	var ce *chdb.Error
	if !errors.As(err, &ce) || ce.Code != 395 || ce.Name != "FUNCTION_THROW_IF_VALUE_IS_NON_ZERO" || len(res) != 1 {
		t.Fatalf("results %+v, error %v; want one result, then code 395", res, err)
	}
	if _, err := s.Query(ctx(t), "SELEC 1"); !errors.As(err, &ce) || ce.Code != 62 || ce.Name != "SYNTAX_ERROR" {
		t.Fatalf("error %v; want a syntax error (62)", err)
	}
	if r, err := s.Query(ctx(t), "SELECT 'after'"); err != nil || len(r.Rows) != 1 || r.Rows[0][0] != "after" {
		t.Fatalf("after the errors: %+v, %v", r, err)
	}
	ran := s.Ran()
	if len(ran) != 8 || ran[5].Err == nil || ran[5].Statement != "SELECT throwIf(number = 3) FROM numbers(10)" {
		t.Errorf("ran %+v", ran)
	}
}
