package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec/burn/burntest"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/exec/engine/docker"
	"spatec.dev/spatec/exec/progress"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

const mib = int64(1) << 20

// Sizes of the test dataset: small enough that a drain takes seconds on a
// 2-core machine, large enough to span several batches of the reference arm.
const (
	testMessages     = 20_000
	testMessageBytes = 128
	testPartitions   = 4
)

// newEngine connects to the local Docker engine, or fails (CI) or skips.
func newEngine(t testing.TB) *docker.Engine { return testenv.Docker(t) }

// clickhouseAddr is the ClickHouse the tests use.
func clickhouseAddr() string { return testenv.ClickHouseAddr() }

// requireClickHouse fails (CI) or skips the test when ClickHouse does not
// answer.
func requireClickHouse(t testing.TB) { testenv.RequireClickHouse(t) }

// testDatabase names a ClickHouse database of the test's own and drops it
// when the test ends; the session creates it.
func testDatabase(t testing.TB) string {
	t.Helper()
	db := "spatec_test_" + uuid.NewString()[:8]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s, err := chstore.Open(ctx, clickhouseAddr(), "default", "default", "")
		if err != nil {
			t.Errorf("dropping database %s: %v", db, err)
			return
		}
		defer s.Close()
		if err := s.Exec(ctx, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Errorf("dropping database %s: %v", db, err)
		}
	})
	return db
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// repoRoot walks up from the test's directory to the module's go.mod: the
// checkout the reference arm is built from.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// testEnv is a fixture environment like envs/local: host network, an
// embedded broker on a free port, the host's ClickHouse (chAddr) in a
// database of the test's own.
func testEnv(brokerAddr, chAddr, database string) schema.Environment {
	return schema.Environment{
		Name:        "local",
		Class:       "fixture",
		Description: "executor tests: embedded broker, host ClickHouse",
		Host:        schema.Host{Cores: 2, Memory: 24 << 30},
		Partitions:  testPartitions,
		Reserve:     schema.Reserve{CPUs: 0.5, Memory: 4 << 30},
		Infra: schema.Infra{
			Broker: schema.Service{
				Run: "embedded", Name: "spatec-kfake", CPUs: 0.5, Memory: 1 << 30, MemorySwap: 1 << 30,
				Addr: brokerAddr, HostAddr: brokerAddr,
			},
			ClickHouse: schema.Service{
				Run: "external", Name: "clickhouse", CPUs: 0.5, Memory: 2 << 30, MemorySwap: 2 << 30,
				Addr: chAddr, HostAddr: chAddr,
			},
		},
		Envelope:  schema.Resources{CPUs: 1, Memory: 1 << 30},
		Network:   "host",
		Endpoints: schema.Endpoints{Brokers: brokerAddr, ClickHouse: chAddr, Database: database},
		Workloads: map[string]schema.Workload{jsonRows: testWorkload()},
	}
}

// jsonRows is the workload the executor's tests run.
const jsonRows = "json-rows"

// treeWorkload is the json-rows workload of the tree, as envs/local hosts
// it, read once.
var treeWorkload = sync.OnceValues(func() (schema.Workload, error) {
	dir, err := os.Getwd()
	if err != nil {
		return schema.Workload{}, err
	}
	for ; !fileExists(filepath.Join(dir, "cue.mod")); dir = filepath.Dir(dir) {
		if dir == filepath.Dir(dir) {
			return schema.Workload{}, errors.New("no cue.mod above the test's directory")
		}
	}
	t, err := compiler.Load(compiler.Options{Dir: dir})
	if err != nil {
		return schema.Workload{}, err
	}
	return t.HostedWorkload("local", jsonRows)
})

// testWorkload is the tree's json-rows workload at the tests' size:
// testMessages messages of testMessageBytes bytes, drained within 60 s.
func testWorkload() schema.Workload {
	wl, err := treeWorkload()
	if err != nil {
		panic(fmt.Sprintf("reading the tree's json-rows workload: %v", err))
	}
	wl.Messages = testMessages
	wl.Generator.MessageBytes = testMessageBytes
	wl.DrainTimeout = 60
	if wl.DatasetVersion, err = workloads.Version(wl); err != nil {
		panic(err)
	}
	return wl
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// holdEnv is an environment for hold runs, which start no infrastructure.
func holdEnv() schema.Environment {
	return testEnv("127.0.0.1:1", "127.0.0.1:1", "spatec_unused")
}

// entrantName is an entrant name unique to one test, so everything the test
// started can be found by its dev.spatec.entrant label.
func entrantName(prefix string) string {
	return prefix + "-" + uuid.NewString()[:8]
}

// burnPlan is a plan whose entrant is one data-plane container running the
// burn test program with args, under cpus and memory (no swap).
func burnPlan(env schema.Environment, entrant string, cpus float64, memory int64, args ...string) *schema.Plan {
	return &schema.Plan{
		Env:      env,
		Workload: env.Workloads[jsonRows],
		Variant:  "default",
		Entrant: schema.Entrant{
			Name:        entrant,
			Description: "the burn test program",
			Supports:    []string{env.Name},
			Version: schema.Version{
				Pin: burntest.Version, Container: "burn",
				Command: []string{burntest.Entrypoint, "-version"}, Match: `^burn ([0-9.]+)`,
			},
			Knobs: map[string]schema.Knob{},
			Containers: map[string]schema.Container{
				"burn": {
					Role:       schema.RoleDataPlane,
					Image:      burntest.Tag,
					Runtime:    "go",
					CPUs:       cpus,
					Memory:     memory,
					MemorySwap: memory,
					Args:       args,
				},
			},
		},
	}
}

// referencePlan is the reference entrant of envs/local against env: the
// executor builds its image from ./cmd/spatec-reference.
func referencePlan(env schema.Environment, entrant string) *schema.Plan {
	wl := env.Workloads[jsonRows]
	return &schema.Plan{
		Env:      env,
		Workload: wl,
		Variant:  "default",
		Entrant: schema.Entrant{
			Name:        entrant,
			Description: "spatec's Go reference consumer",
			Supports:    []string{env.Name},
			Version: schema.Version{
				Pin: "0.1.1", Container: "consumer",
				Command: []string{"/spatec-reference", "-version"}, Match: `^spatec-reference ([0-9.]+)`,
			},
			Knobs: map[string]schema.Knob{
				"consumers":  {Type: "int", Value: env.Partitions, Parallelism: true},
				"batch_rows": {Type: "int", Value: 20_000},
			},
			Containers: map[string]schema.Container{
				"consumer": {
					Role:       schema.RoleDataPlane,
					Image:      "spatec-reference:0.1.1",
					Build:      &schema.Build{Program: "./cmd/spatec-reference"},
					Runtime:    "go",
					Entrypoint: []string{"/spatec-reference"},
					CPUs:       1,
					Memory:     512 * mib,
					MemorySwap: 512 * mib,
					Environment: map[string]string{
						"SPATEC_BROKERS":    env.Endpoints.Brokers,
						"SPATEC_TOPIC":      wl.Topic,
						"SPATEC_GROUP":      "spatec-reference",
						"SPATEC_CLICKHOUSE": env.Endpoints.ClickHouse,
						"SPATEC_TABLE":      env.Endpoints.Database + "." + wl.Table.Name,
						"SPATEC_CONSUMERS":  strconv.Itoa(env.Partitions),
						"SPATEC_BATCH_ROWS": "20000",
					},
				},
			},
		},
	}
}

// newRunner is a runner on the real engine and cgroup tree. Its progress
// lines go to watch (when not nil), its log lines to the test log.
func newRunner(t testing.TB, e *docker.Engine, watch *phaseWatch) *Runner {
	t.Helper()
	r := &Runner{
		Engine:    e,
		Cgroups:   HostCgroups{},
		Period:    100 * time.Millisecond,
		Log:       testLog{t},
		Version:   "0.0.0-test",
		Commit:    "test",
		SourceDir: repoRoot(t),
	}
	if watch != nil {
		r.Progress = progress.New(watch, progress.WithTerminal(false))
	}
	return r
}

// testLog writes the runner's log lines to the test log.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("runner: %s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

// phaseWatch reads the runner's plain progress lines and tells a test when
// a phase starts, so a fault can be injected inside the drain window rather
// than after a guessed delay.
type phaseWatch struct {
	mu      sync.Mutex
	partial []byte
	waiters map[string][]chan struct{}
}

func newPhaseWatch() *phaseWatch { return &phaseWatch{waiters: map[string][]chan struct{}{}} }

// next returns a channel closed when phase next starts.
func (w *phaseWatch) next(phase string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.waiters[phase] = append(w.waiters[phase], ch)
	return ch
}

func (w *phaseWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break // an unterminated line waits for the rest
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		for phase, chans := range w.waiters {
			if strings.Contains(line, "phase="+phase+" state=start") {
				for _, ch := range chans {
					close(ch)
				}
				delete(w.waiters, phase)
			}
		}
	}
	return len(p), nil
}

// afterPhase runs fn once phase starts, after delay, unless done closes
// first.
func afterPhase(w *phaseWatch, phase string, delay time.Duration, done <-chan struct{}, fn func()) {
	started := w.next(phase)
	go func() {
		select {
		case <-started:
		case <-done:
			return
		}
		select {
		case <-time.After(delay):
			fn()
		case <-done:
		}
	}()
}

// assertNothingLeft checks through the engine that nothing labelled with the
// run or with the entrant is left, running or not.
func assertNothingLeft(t testing.TB, e *docker.Engine, pairs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i+1 < len(pairs); i += 2 {
		left, err := e.ListByLabel(ctx, pairs[i], pairs[i+1])
		if err != nil {
			t.Fatalf("listing what is labelled %s=%s: %v", pairs[i], pairs[i+1], err)
		}
		if !left.Empty() {
			t.Errorf("left behind under %s=%s: containers %v, networks %v", pairs[i], pairs[i+1], left.Containers, left.Networks)
		}
	}
}

// cleanupLabel removes whatever a failed test left under key=value, so one
// failure does not leave containers running for the next test.
func cleanupLabel(t testing.TB, e *docker.Engine, key, value string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.RemoveByLabel(ctx, key, value); err != nil {
			t.Errorf("cleanup of %s=%s: %v", key, value, err)
		}
	})
}

// testContext is a context bounded well under the package's time budget.
func testContext(t testing.TB, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx, cancel
}

func describe(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%T: %v", err, err)
}
