package main

// The Kafka Connect arm's worker and connector properties, as every plan
// writes them, checked by Connect's own config definitions (the runtime
// the arm's image runs, from Maven Central) through the checker in
// entrants/kafka-connect/check. Without it a misspelt key would first be
// met on the bench host, where Connect only logs it.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// connectCheck is the checker's Maven project and the runnable jar it
// packages.
var connectCheck = schema.Compile{
	Maven: &schema.Maven{Project: "entrants/kafka-connect/check", Jar: "spatec-connect-check.jar"},
	To:    "/dev/null",
}

// connectChecker returns the checker's jar, compiled once per content of
// its project into the compile cache spatec exec uses.
func connectChecker(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"java", "javac", "mvn"} {
		testenv.Require(t, tool+" (builds and runs the Kafka Connect config checker)", func() error {
			_, err := exec.LookPath(tool)
			return err
		})
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tree := compile.Tree{Dir: root}
	if cache := defaultCache(); cache != "" {
		tree.CacheDir = filepath.Join(cache, "compile")
	}
	out, err := tree.Build(t.Context(), connectCheck)
	if err != nil {
		t.Fatalf("building the Kafka Connect config checker: %v", err)
	}
	return out.Path
}

// connectFiles writes, into a new directory, the two files the plan's
// worker hands connect-standalone (its entrypoint's arguments), by their
// base names; it returns the directory and the names, worker first.
func connectFiles(t *testing.T, p schema.Plan) (string, []string) {
	t.Helper()
	c, ok := p.Entrant.Containers["worker"]
	if !ok {
		t.Fatalf("%s/%s: no worker container", p.Env.Name, p.Variant)
	}
	if len(c.Entrypoint) != 3 || !strings.HasSuffix(c.Entrypoint[0], "connect-standalone.sh") {
		t.Fatalf("%s/%s: the worker does not run connect-standalone.sh WORKER CONNECTOR: %q", p.Env.Name, p.Variant, c.Entrypoint)
	}
	dir := t.TempDir()
	var names []string
	for _, path := range c.Entrypoint[1:] {
		text, ok := c.Files[path]
		if !ok {
			t.Fatalf("%s/%s: connect-standalone reads %s, which the plan does not write", p.Env.Name, p.Variant, path)
		}
		name := filepath.Base(path)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if names[0] == names[1] {
		t.Fatalf("%s/%s: worker and connector files share the name %s", p.Env.Name, p.Variant, names[0])
	}
	return dir, names
}

// runConnectCheck runs the checker on the two files in dir; it returns
// what it printed and whether it found a problem (exit status 1). Any
// other failure fails the test.
func runConnectCheck(t *testing.T, jar, dir string, names []string) (string, bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "java", "-jar", jar, names[0], names[1])
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), false
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return stdout.String(), true
	default:
		t.Fatalf("running the Kafka Connect config checker: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		return "", false
	}
}

// TestKafkaConnectConfigIsConnects checks the worker and connector
// properties of every Kafka Connect plan, of every environment and
// variant, with Connect's definitions; and that the check refuses a
// misspelt key of a real plan's files, so that it is known to consult
// them.
func TestKafkaConnectConfigIsConnects(t *testing.T) {
	jar := connectChecker(t)
	var plans []schema.Plan
	for _, d := range planAll(t) {
		if d.Plan.Entrant.Name == "kafka-connect" {
			plans = append(plans, d.Plan)
		}
	}
	if len(plans) == 0 {
		t.Fatal("no plan of kafka-connect")
	}
	// The definitions are those of the Connect the image runs.
	pom, err := os.ReadFile(filepath.Join("..", "..", connectCheck.Maven.Project, "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if want := "<kafka.version>" + p.Entrant.Version.Pin + "</kafka.version>"; !bytes.Contains(pom, []byte(want)) {
			t.Errorf("%s/%s runs Connect %s, but the checker's pom.xml has no %s", p.Env.Name, p.Variant, p.Entrant.Version.Pin, want)
		}
	}
	for _, p := range plans {
		t.Run(p.Env.Name+"/"+p.Variant, func(t *testing.T) {
			dir, names := connectFiles(t, p)
			if out, bad := runConnectCheck(t, jar, dir, names); bad {
				t.Errorf("Connect's definitions refuse the plan's properties:\n%s", out)
			}
		})
	}

	// One key of each file renamed as a slip of the pen would: each must
	// be refused on its own line.
	breaks := []struct {
		file     int
		from, to string
	}{
		{1, "tasks.max=", "task.max="},
		{0, "consumer.max.poll.records=", "consumer.max.pol.records="},
	}
	for _, b := range breaks {
		t.Run("refuses "+strings.TrimSuffix(b.to, "="), func(t *testing.T) {
			dir, names := connectFiles(t, plans[0])
			path := filepath.Join(dir, names[b.file])
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(text, []byte("\n"+b.from)) && !bytes.HasPrefix(text, []byte(b.from)) {
				t.Fatalf("%s of %s/%s has no line %s…", names[b.file], plans[0].Env.Name, plans[0].Variant, b.from)
			}
			broken := strings.Replace("\n"+string(text), "\n"+b.from, "\n"+b.to, 1)[1:]
			if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			out, bad := runConnectCheck(t, jar, dir, names)
			want := names[b.file] + ": " + strings.TrimSuffix(b.to, "=") + ": "
			if !bad || !strings.Contains(out, want) {
				t.Errorf("the checker did not refuse %s (want a line starting %q); it printed:\n%s", b.to, want, out)
			}
		})
	}
}
