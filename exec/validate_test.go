package exec

import (
	"errors"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/runs/record"
)

// TestValidatorRefusesWithTheSystemsOwnMessage runs the Kafka engine
// entrant's own check (its setup SQL on a throwaway server from its image)
// on the entrant as committed, which passes, and on a broken one, which is
// refused with ClickHouse's message.
func TestValidatorRefusesWithTheSystemsOwnMessage(t *testing.T) {
	e := newEngine(t)
	testenv.Require(t, "mmdebstrap (builds the Debian ClickHouse image)", func() error {
		_, err := osexec.LookPath("mmdebstrap")
		return err
	})
	ctx, _ := testContext(t, 5*time.Minute)
	tree, err := compiler.Load(compiler.Options{Dir: repoRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	plan, problems := tree.Resolve("local-containers", "clickhouse-kafka-engine", "")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	id, err := record.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{runner: newRunner(t, e, nil), env: plan.Env, id: id, images: map[string]image{}}
	if s.process, err = processID(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	c := plan.Entrant.Containers["engine"]
	if _, err := s.ensureImage(ctx, c.Image, "", c.Build); err != nil {
		t.Fatal(err)
	}
	if err := s.validate(ctx, plan); err != nil {
		t.Fatalf("the entrant as committed: %v", err)
	}
	c.Files["/etc/spatec/setup.sql"] = strings.Replace(c.Files["/etc/spatec/setup.sql"], "ENGINE = Distributed(", "ENGINE = Distributd(", 1)
	err = s.validate(ctx, plan)
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "clickhouse-kafka-engine: its configuration does not pass its own check") ||
		!strings.Contains(err.Error(), "Unknown table engine Distributd") {
		t.Fatalf("a broken setup: %v; want a refusal with ClickHouse's own message", err)
	}
	assertNothingLeft(t, e, LabelRun, id)
}
