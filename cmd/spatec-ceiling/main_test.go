package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec/broker"
	"spatec.dev/spatec/exec/ceiling"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/workloads"
)

func TestMissingFlagsAreNamed(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-messages", "10"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "-brokers, -clickhouse, -workload required") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the missing flags", code, errOut.String())
	}
}

// TestMeasuresAndPrintsTheFigures runs the client against an embedded
// broker and the test ClickHouse: the last line on stdout is the figures.
func TestMeasuresAndPrintsTheFigures(t *testing.T) {
	testenv.RequireClickHouse(t)
	ctx := context.Background()
	b, err := broker.StartEmbedded(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tree, err := compiler.Load(compiler.Options{Dir: "../.."})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := tree.HostedWorkload("local", "json-rows")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := workloads.Open(wl, 20_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := broker.NewClient(b.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.EnsureTopic(ctx, wl.Topic, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prefill(ctx, wl.Topic, ds, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if st, err := chstore.Open(ctx, testenv.ClickHouseAddr(), "default", "default", ""); err == nil {
			_ = st.Exec(ctx, "DROP DATABASE IF EXISTS spatec_ceiling_test_ceiling")
			st.Close()
		}
	})
	workload, err := json.Marshal(wl)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(ctx, []string{
		"-brokers", b.Addrs()[0], "-clickhouse", testenv.ClickHouseAddr(), "-database", "spatec_ceiling_test",
		"-workload", string(workload), "-messages", "20000",
	}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var f ceiling.Figures
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		t.Fatalf("stdout %q: %v", out.String(), err)
	}
	if f.Broker.MessagesPerSec <= 0 || f.Broker.BytesPerSec <= 0 || f.ClickHouse.RowsPerSec <= 0 || f.ClickHouse.Format != "Native" {
		t.Errorf("figures %+v; want both ceilings", f)
	}
	for _, step := range []string{"broker consume ceiling: 20000 messages", "clickhouse ingest ceiling: 1 writers"} {
		if !strings.Contains(errOut.String(), step) {
			t.Errorf("stderr lacks %q:\n%s", step, errOut.String())
		}
	}
}
