// Package harnessenv declares, for tests, an environment of the public
// reference harness's authoritative host (spate-etl/benchmark's
// environments/c8g-8xl-ec2-docker.toml at 9d69d35) and resolves it with
// spatec's compiler against the project's own schema and workloads: the
// host, the partitions, the infrastructure's images and caps and the
// envelope the harness publishes, as a spatec environment states them.
//
// It also writes that host's files in the harness's own formats, composed
// here rather than copied: its environment profile, a ceilings file and a
// schema-2 record, each holding the facts of the host and every member the
// format has, with the digests that tie them together (the profile's, which
// a record names, and the infrastructure's) computed as the harness
// computes them. Tests of spatec reading the harness's published files
// themselves take them from a checkout named by SPATEC_HARNESS (Checkout).
//
// The tree's own environments are not used: a test of what agrees with the
// harness's facts needs an environment whose facts it knows, and one whose
// facts it changes to see a difference named.
package harnessenv

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	spatec "spatec.dev/spatec"
	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// Name is the environment's name, the harness's env_id.
const Name = "c8g-8xl-ec2-docker"

// Dir is where the environment's package lies in a tree.
const Dir = "envs/" + Name

// Source is the environment's CUE: the harness's host (32 cores, 64 GiB),
// its 8 partitions, Redpanda v26.1.13 at 3 CPUs and 8 GiB, ClickHouse 26.3
// at 16 CPUs and 16 GiB, and a reserve of 7 CPUs, which leaves each arm the
// harness's 6 CPUs and 24 GiB (C1). The services are declared as
// bench-96c declares the same images.
const Source = `// The reference harness's authoritative host, as a spatec environment.
package c8g8xlec2docker

import (
	"spatec.dev/spatec/schema"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch:sensorbatch"
)

let GiB = schema.GiB

env: schema.#Environment & {
	name:        "c8g-8xl-ec2-docker"
	class:       "authoritative"
	description: "AWS EC2 c8g.8xlarge, the reference harness's host"
	host: {
		cores:  32
		memory: 64 * GiB
	}
	partitions: 8
	reserve: {
		cpus:   7
		memory: 8 * GiB
	}
	infra: {
		broker: {
			run:  "container"
			name: "spatec-redpanda"
			image: ref: "docker.redpanda.com/redpandadata/redpanda:v26.1.13"
			version: {command: ["rpk", "version"], match: "(v[0-9]+\\.[0-9]+\\.[0-9]+)"}
			cpus:   3
			memory: 8 * GiB
			args: ["redpanda", "start", "--node-id", "0", "--overprovisioned", "--check=false",
				"--smp", "\(cpus)", "--memory", "\(div(memory, 2*GiB))G", "--reserve-memory", "0M",
				"--kafka-addr", "internal://0.0.0.0:9092,external://0.0.0.0:19092",
				"--advertise-kafka-addr", "internal://\(name):9092,external://127.0.0.1:19092",
				"--schema-registry-addr", "0.0.0.0:8081"]
			publish: "19092/tcp": "19092"
			addr:     "\(name):9092"
			hostAddr: "127.0.0.1:19092"
			schemaRegistry: {}
		}
		clickhouse: {
			run:  "container"
			name: "spatec-clickhouse"
			image: ref: "clickhouse/clickhouse-server:26.3"
			version: {command: ["clickhouse-client", "--version"], match: "version ([0-9.]+[0-9])"}
			cpus:   16
			memory: 16 * GiB
			publish: "9000/tcp": "19000"
			user:     "default"
			password: "spatec"
			environment: CLICKHOUSE_PASSWORD: password
			nofile:   262144
			addr:     "\(name):9000"
			hostAddr: "127.0.0.1:19000"
		}
	}
	envelope: memory: 24 * GiB
	network: "bridge"
	workloads: "sensor-batch": sensorbatch.#workload & {messages: 1_500_000}
}
`

// Edit replaces Old, which must occur in Source, by New: one fact changed.
type Edit struct{ Old, New string }

// source is Source with the edits made.
func source(t testing.TB, edits []Edit) string {
	t.Helper()
	src := Source
	for _, e := range edits {
		if !strings.Contains(src, e.Old) {
			t.Fatalf("harnessenv: %q is not in the environment's source", e.Old)
		}
		src = strings.Replace(src, e.Old, e.New, 1)
	}
	return src
}

// Tree is the project's module file, schema and workloads (the tree
// embedded in the binary) with this environment as its only one, and no
// entrants.
func Tree(t testing.TB, edits ...Edit) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(spatec.Tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if top, _, _ := strings.Cut(p, "/"); top == "envs" || top == "entrants" {
			return nil
		}
		b, err := fs.ReadFile(spatec.Tree, p)
		if err != nil {
			return err
		}
		m[p] = &fstest.MapFile{Data: b}
		return nil
	})
	if err != nil {
		t.Fatalf("harnessenv: reading the embedded tree: %v", err)
	}
	m[path.Join(Dir, "env.cue")] = &fstest.MapFile{Data: []byte(source(t, edits))}
	return m
}

// WriteTree writes Tree into dir, for a command's --tree.
func WriteTree(t testing.TB, dir string, edits ...Edit) {
	t.Helper()
	for p, f := range Tree(t, edits...) {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Environment resolves the environment, with the edits made, as the
// compiler resolves every environment of a tree.
func Environment(t testing.TB, edits ...Edit) *schema.Environment {
	t.Helper()
	tr, err := compiler.Load(compiler.Options{FS: Tree(t, edits...)})
	if err != nil {
		t.Fatalf("harnessenv: loading the tree: %v", err)
	}
	if b := tr.Broken(); len(b) > 0 {
		t.Fatalf("harnessenv: the environment does not resolve: %v", b)
	}
	env, err := tr.Environment(Name)
	if err != nil {
		t.Fatalf("harnessenv: %v", err)
	}
	return env
}

// What the harness's published records (results/c8g-8xl-ec2-docker/*/
// 2026-07.jsonl) say its infrastructure ran: the images' IDs (the engine's
// content IDs, as spatec's records carry them too) and the versions read
// inside them. TestComposedFilesAreTheHarnessPublishedFormats holds them to
// those records.
const (
	BrokerImageID     = "sha256:ae0a858eddd0538dacbba5696f9be1f590de1fe51283964afc85f5510fa8f32e"
	BrokerVersion     = "v26.1.13"
	ClickHouseImageID = "sha256:422be85ae7344058369cdd366ac0efea9daa8428b55c9cf50258e83a7d12fcb3"
	ClickHouseVersion = "26.3.17.56"
)

// OnHost makes rec a spatec run on env as the executor records one: its
// environment and digests, the infrastructure's containers under env's
// caps running the images the harness's records name, the host's cores as
// the engine counts them, the arm's data plane at the envelope, and the
// whole sensor-batch dataset of env.
func OnHost(env *schema.Environment) func(*record.Record) {
	return func(rec *record.Record) {
		p := &schema.Plan{Env: *env}
		rec.Run.Env, rec.Run.EnvDigest, rec.Run.InfraDigest = env.Name, p.EnvDigest(), p.InfraDigest()
		rec.Run.Host.Cores = env.Host.Cores
		// What the kernel reports of a 64 GiB instance, less than what it
		// was sold with.
		rec.Run.Host.MemoryBytes = env.Host.Memory - env.Host.Memory/32
		b, ch := env.Infra.Broker, env.Infra.ClickHouse
		rec.Run.Infra = []record.Container{
			{Name: b.Name, Role: schema.ServiceBroker, Image: b.Image.Ref, ImageDigest: BrokerImageID, Version: BrokerVersion,
				CPUs: strconv.FormatFloat(b.CPUs, 'f', 2, 64), MemoryBytes: b.Memory},
			{Name: ch.Name, Role: schema.ServiceClickHouse, Image: ch.Image.Ref, ImageDigest: ClickHouseImageID, Version: ClickHouseVersion,
				CPUs: strconv.FormatFloat(ch.CPUs, 'f', 2, 64), MemoryBytes: ch.Memory},
		}
		for i := range rec.SUT.Containers {
			if c := &rec.SUT.Containers[i]; c.Role == schema.RoleDataPlane {
				c.CPUs, c.MemoryBytes = strconv.FormatFloat(env.Envelope.CPUs, 'f', 2, 64), env.Envelope.Memory
			}
		}
		wl := env.Workloads["sensor-batch"]
		// The transform keeps 73.5 rows of a batch's 100.
		rec.Run.Dataset = record.Dataset{Workload: wl.Name, Version: wl.DatasetVersion, Messages: wl.Messages,
			ExpectedRows: wl.Messages * 735 / 10}
	}
}
