package harnessenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// The harness's infrastructure on its host, as its environment profile
// declares it. The files this package writes in the harness's formats (the
// profile, the ceilings, a record) are composed from these, so that a fact
// two of them state is stated once, and each digest that names another
// file is computed from it.
const (
	brokerKind             = "redpanda"
	brokerImage            = "redpandadata/redpanda:v26.1.13"
	brokerCPUs             = 3
	brokerMemory     int64 = 8 << 30
	clickHouseImage        = "clickhouse/clickhouse-server:26.3"
	clickHouseCPUs         = 16
	clickHouseMemory int64 = 16 << 30
	partitions             = 8
	registry               = "redpanda-builtin"
	// hostDescription is the host as the profile and the ceilings'
	// provenance name it.
	hostDescription = "AWS EC2 c8g.8xlarge, a 500 GiB gp3 volume"
)

// profile is the harness's environment profile (environments/<env_id>.toml),
// with the members its reader knows (harness/src/environment.rs); vm_cpus
// and vm_memory, which describe a host behind a VM, are left out, as the
// harness's own profile of this host leaves them.
type profile struct {
	ID    string `toml:"id"`
	Class string `toml:"class"`
	Host  struct {
		Description string `toml:"description"`
		CPU         string `toml:"cpu"`
		Cores       int    `toml:"cores"`
		CoreLayout  string `toml:"core_layout"`
		Memory      string `toml:"memory"`
		OS          string `toml:"os"`
		Arch        string `toml:"arch"`
		Caveats     string `toml:"caveats"`
	} `toml:"host"`
	Infra struct {
		Partitions int `toml:"partitions"`
		Broker     struct {
			Kind     string `toml:"kind"`
			Image    string `toml:"image"`
			CPUs     string `toml:"cpus"`
			Memory   string `toml:"memory"`
			Registry string `toml:"registry"`
		} `toml:"broker"`
		ClickHouse struct {
			Image  string `toml:"image"`
			CPUs   string `toml:"cpus"`
			Memory string `toml:"memory"`
		} `toml:"clickhouse"`
	} `toml:"infra"`
	Ceiling struct {
		File string `toml:"file"`
	} `toml:"ceiling"`
}

// hostProfile is the profile of the harness's host.
func hostProfile() profile {
	var p profile
	p.ID, p.Class = Name, "authoritative"
	h := &p.Host
	h.Description, h.CPU, h.Cores = hostDescription, "AWS Graviton4", 32
	h.CoreLayout, h.Memory, h.OS, h.Arch = "32 physical cores, no SMT", "64 GiB", "Ubuntu 24.04 with Docker CE", "aarch64"
	h.Caveats = "A single-tenant virtual instance: each vCPU is a dedicated core."
	in := &p.Infra
	in.Partitions = partitions
	in.Broker.Kind, in.Broker.Image, in.Broker.Registry = brokerKind, brokerImage, registry
	in.Broker.CPUs, in.Broker.Memory = strconv.Itoa(brokerCPUs), dockerMemory(brokerMemory)
	in.ClickHouse.Image = clickHouseImage
	in.ClickHouse.CPUs, in.ClickHouse.Memory = strconv.Itoa(clickHouseCPUs), dockerMemory(clickHouseMemory)
	p.Ceiling.File = "ceilings/" + Name + ".json"
	return p
}

// dockerMemory writes a size in GiB as the harness's profiles do: "8g".
func dockerMemory(b int64) string { return strconv.FormatInt(b>>30, 10) + "g" }

// ProfileBytes is the harness's environment profile of its host, in the
// harness's format, as this package composes it.
func ProfileBytes(t testing.TB) []byte {
	t.Helper()
	b, err := toml.Marshal(hostProfile())
	if err != nil {
		t.Fatalf("harnessenv: writing the environment profile: %v", err)
	}
	return append([]byte("# The reference harness's host, composed by spatec's tests in the harness's profile format.\n\n"), b...)
}

// ProfileFile writes ProfileBytes where the harness keeps it
// (environments/<env_id>.toml) under a directory of the test's, and
// returns its path.
func ProfileFile(t testing.TB) string {
	t.Helper()
	return writeFile(t, filepath.Join(t.TempDir(), "environments", Name+".toml"), ProfileBytes(t))
}

// EnvDigest is the profile's digest as the harness takes it of the file's
// bytes, which every record of the host names as its run.env_digest.
func EnvDigest(t testing.TB) string {
	t.Helper()
	return shortDigest(ProfileBytes(t))
}

// InfraKey is what the harness hashes into its infrastructure digest
// (Environment::infra_digest): the profile's broker kind, CPUs and memory,
// ClickHouse's CPUs and memory, and the partitions, joined by "|".
func InfraKey() string {
	in := hostProfile().Infra
	return strings.Join([]string{in.Broker.Kind, in.Broker.CPUs, in.Broker.Memory,
		in.ClickHouse.CPUs, in.ClickHouse.Memory, strconv.Itoa(in.Partitions)}, "|")
}

// InfraDigest is the harness's digest of InfraKey, which its ceilings and
// records carry.
func InfraDigest() string { return shortDigest([]byte(InfraKey())) }

// shortDigest is the harness's short digest: the first twelve hex
// characters of SHA-256.
func shortDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// writeFile writes b at path, making its directory.
func writeFile(t testing.TB, path string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("harnessenv: %v", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatalf("harnessenv: %v", err)
	}
	return path
}

// Checkout is the checkout of the reference harness (spate-etl/benchmark)
// that SPATEC_HARNESS names, for a test of spatec reading the harness's own
// files; without it the test is skipped, saying how to run it with run, a
// `go test` command line after the variable.
func Checkout(t testing.TB, run string) string {
	t.Helper()
	dir := os.Getenv("SPATEC_HARNESS")
	if dir == "" {
		t.Skipf("reads the harness's own files: SPATEC_HARNESS=/path/to/a/checkout/of/spate-etl/benchmark %s", run)
	}
	if _, err := os.Stat(filepath.Join(dir, "environments", Name+".toml")); err != nil {
		t.Fatalf("SPATEC_HARNESS=%s is not a checkout of the reference harness: %v", dir, err)
	}
	return dir
}

// cpuMax is a CPU cap as the harness reads it back from a cgroup's cpu.max:
// quota and period in microseconds.
func cpuMax(cpus int) string { return fmt.Sprintf("%d 100000", cpus*100_000) }
