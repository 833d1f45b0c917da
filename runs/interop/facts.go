package interop

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"spatec.dev/spatec/runs/record"
	"spatec.dev/spatec/schema"
)

// Whether a spatec run and a run of the reference harness were measured in
// the same environment is decided on facts, never on the environment's
// name alone, and only on facts both sides state: what each record carries
// and what the environment declaration its env_digest names says (spatec's
// environment of that digest, the harness's profile of that digest). A
// fact one side does not state is not compared, and is listed as such.

// The facts, in the order a reader is shown them.
const (
	FactEnv               = "env"
	FactHostCores         = "host.cores"
	FactHostMemory        = "host.memory"
	FactHostArch          = "host.arch"
	FactPartitions        = "partitions"
	FactBrokerImage       = "broker.image"
	FactBrokerImageID     = "broker.image_id"
	FactBrokerVersion     = "broker.version"
	FactBrokerCPUs        = "broker.cpus"
	FactBrokerMemory      = "broker.memory"
	FactClickHouseImage   = "clickhouse.image"
	FactClickHouseImageID = "clickhouse.image_id"
	FactClickHouseVersion = "clickhouse.version"
	FactClickHouseCPUs    = "clickhouse.cpus"
	FactClickHouseMemory  = "clickhouse.memory"
	FactEnvelopeCPUs      = "envelope.cpus"
	FactEnvelopeMemory    = "envelope.memory"
)

// factKeys lists every fact with its name for a reader, in order.
func factKeys() []struct{ key, label string } {
	return []struct{ key, label string }{
		{FactEnv, "environment"}, {FactHostCores, "host cores"}, {FactHostMemory, "host memory"}, {FactHostArch, "host architecture"},
		{FactPartitions, "partitions"},
		{FactBrokerImage, "broker image"}, {FactBrokerImageID, "broker image ID"}, {FactBrokerVersion, "broker version"},
		{FactBrokerCPUs, "broker CPUs"}, {FactBrokerMemory, "broker memory"},
		{FactClickHouseImage, "ClickHouse image"}, {FactClickHouseImageID, "ClickHouse image ID"}, {FactClickHouseVersion, "ClickHouse version"},
		{FactClickHouseCPUs, "ClickHouse CPUs"}, {FactClickHouseMemory, "ClickHouse memory"},
		{FactEnvelopeCPUs, "the arm's envelope CPUs"}, {FactEnvelopeMemory, "the arm's envelope memory"},
	}
}

// requiredFacts must be stated by both sides for them to agree at all: the
// environment, its partitions and its infrastructure's caps, which every
// record of either tool on containerised infrastructure carries.
func requiredFacts() []string {
	return []string{FactEnv, FactPartitions, FactBrokerCPUs, FactBrokerMemory, FactClickHouseCPUs, FactClickHouseMemory}
}

// FactLabel is a fact's name for a reader.
func FactLabel(key string) string {
	for _, k := range factKeys() {
		if k.key == key {
			return k.label
		}
	}
	return key
}

// Fact is one fact of the environment a run was measured in, as one side
// states it.
type Fact struct {
	Key string `json:"key"`
	// Value is the fact in a canonical form, which is what is compared:
	// CPUs as a decimal, memory in bytes, an image as its repository's
	// path and tag.
	Value string `json:"value"`
	// Shown is the fact for a reader (8 GiB, sha256:ae0a858eddd0).
	Shown string `json:"shown"`
	// From says where it was read: a record's field, or the environment
	// declaration its digest names.
	From string `json:"from"`
}

// Facts are the facts one side states of an environment, at most one per
// key.
type Facts []Fact

// Get returns the fact of key, and whether it is stated.
func (fs Facts) Get(key string) (Fact, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f, true
		}
	}
	return Fact{}, false
}

// set states a fact, replacing what was stated of its key before.
func (fs *Facts) set(key, value, shown, from string) {
	if value == "" {
		return
	}
	f := Fact{Key: key, Value: value, Shown: shown, From: from}
	for i := range *fs {
		if (*fs)[i].Key == key {
			(*fs)[i] = f
			return
		}
	}
	*fs = append(*fs, f)
}

// Key is the facts in a canonical form, for grouping runs whose facts are
// the same.
func (fs Facts) Key() string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, f.Key+"="+f.Value)
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// FactPair is one fact as both sides state it.
type FactPair struct {
	Key    string `json:"key"`
	Label  string `json:"label"`
	Spatec Fact   `json:"spatec"`
	Other  Fact   `json:"other"`
}

// Agreement is what two sides' facts say of whether they describe one
// environment.
type Agreement struct {
	// Agree and Differ are the facts both sides state, equal and not.
	Agree  []FactPair `json:"agree"`
	Differ []FactPair `json:"differ,omitempty"`
	// Missing names the facts that must be compared and that a side does
	// not state; Unstated, the others stated by one side alone, which are
	// not compared.
	Missing  []string `json:"missing,omitempty"`
	Unstated []string `json:"unstated,omitempty"`
}

// Agrees reports whether the two sides describe one environment: every
// fact both state is equal, and they state every fact that must be
// compared.
func (a Agreement) Agrees() bool { return len(a.Differ) == 0 && len(a.Missing) == 0 }

// Compare sets the facts spatec's records state of an environment beside
// those another tool's (other, named otherName for a reader) state.
func Compare(spatec, other Facts, otherName string) Agreement {
	var a Agreement
	required := requiredFacts()
	for _, k := range factKeys() {
		s, okS := spatec.Get(k.key)
		o, okO := other.Get(k.key)
		switch {
		case okS && okO:
			p := FactPair{Key: k.key, Label: k.label, Spatec: s, Other: o}
			if s.Value == o.Value {
				a.Agree = append(a.Agree, p)
			} else {
				a.Differ = append(a.Differ, p)
			}
		case slices.Contains(required, k.key):
			var lacks []string
			if !okS {
				lacks = append(lacks, "spatec's")
			}
			if !okO {
				lacks = append(lacks, otherName+"'s")
			}
			a.Missing = append(a.Missing, fmt.Sprintf("%s: not stated by %s, so the environments cannot be shown to agree", k.label, strings.Join(lacks, " or ")))
		case okS:
			a.Unstated = append(a.Unstated, fmt.Sprintf("%s %s (stated by spatec's alone, from %s)", k.label, s.Shown, s.From))
		case okO:
			a.Unstated = append(a.Unstated, fmt.Sprintf("%s %s (stated by %s's alone, from %s)", k.label, o.Shown, otherName, o.From))
		}
	}
	return a
}

// SpatecFacts are the facts of the environment a spatec record was
// measured in: the record's own (its environment, the infrastructure's
// caps, image IDs and versions, the arm's data plane, the engine's count
// of the host's cores) and, when env is the environment its env_digest
// names, what that declares (the host, the partitions, the images by
// reference and tag). A nil env, or one of another digest, adds nothing:
// a record's environment edited since is not the one it ran in.
func SpatecFacts(rec *record.Record, env *schema.Environment) Facts {
	var fs Facts
	fs.set(FactEnv, rec.Run.Env, rec.Run.Env, "run.env")
	if c := rec.Run.Host.Cores; c > 0 {
		fs.set(FactHostCores, strconv.Itoa(c), strconv.Itoa(c), "run.host.cores, as the engine counted them")
	}
	for _, c := range rec.Run.Infra {
		var id, ver, cpus, mem string
		switch c.Role {
		case schema.ServiceBroker:
			id, ver, cpus, mem = FactBrokerImageID, FactBrokerVersion, FactBrokerCPUs, FactBrokerMemory
		case schema.ServiceClickHouse:
			id, ver, cpus, mem = FactClickHouseImageID, FactClickHouseVersion, FactClickHouseCPUs, FactClickHouseMemory
		default:
			continue
		}
		at := "run.infra[" + c.Name + "]"
		fs.set(id, c.ImageDigest, shortID(c.ImageDigest), at+".image_digest")
		fs.set(ver, c.Version, c.Version, at+".version")
		if v, ok := decimalCPUs(c.CPUs); ok {
			fs.set(cpus, v, v, at+".cpus")
		}
		if c.MemoryBytes > 0 {
			fs.set(mem, strconv.FormatInt(c.MemoryBytes, 10), memoryText(c.MemoryBytes), at+".memory_bytes")
		}
	}
	for _, c := range rec.SUT.Containers {
		if c.Role != schema.RoleDataPlane {
			continue
		}
		at := "sut.containers[" + c.Name + "], the data plane (C3: the envelope)"
		if v, ok := decimalCPUs(c.CPUs); ok {
			fs.set(FactEnvelopeCPUs, v, v, at)
		}
		if c.MemoryBytes > 0 {
			fs.set(FactEnvelopeMemory, strconv.FormatInt(c.MemoryBytes, 10), memoryText(c.MemoryBytes), at)
		}
	}
	if env == nil || env.Name != rec.Run.Env || (&schema.Plan{Env: *env}).EnvDigest() != rec.Run.EnvDigest {
		return fs
	}
	from := fmt.Sprintf("environment %s, the declaration of the record's env_digest", env.Name)
	fs.set(FactHostCores, strconv.Itoa(env.Host.Cores), strconv.Itoa(env.Host.Cores), from)
	fs.set(FactHostMemory, strconv.FormatInt(env.Host.Memory, 10), memoryText(env.Host.Memory), from)
	fs.set(FactPartitions, strconv.Itoa(env.Partitions), strconv.Itoa(env.Partitions), from)
	if img := env.Infra.Broker.Image; img != nil {
		fs.set(FactBrokerImage, ImageName(img.Ref), img.Ref, from)
	}
	if img := env.Infra.ClickHouse.Image; img != nil {
		fs.set(FactClickHouseImage, ImageName(img.Ref), img.Ref, from)
	}
	if _, ok := fs.Get(FactEnvelopeCPUs); !ok {
		v := decimal(env.Envelope.CPUs)
		fs.set(FactEnvelopeCPUs, v, v, from)
		fs.set(FactEnvelopeMemory, strconv.FormatInt(env.Envelope.Memory, 10), memoryText(env.Envelope.Memory), from)
	}
	return fs
}

// schema2Facts are the facts a schema-2 record states of its environment:
// its name, the partitions, and the infrastructure's caps as the harness
// read them back from the cgroups, its image IDs and versions.
func schema2Facts(r *s2Record) Facts {
	var fs Facts
	fs.set(FactEnv, r.Run.EnvID, r.Run.EnvID, "run.env_id")
	in := r.Run.Infra
	if in.Partitions > 0 {
		fs.set(FactPartitions, strconv.FormatInt(in.Partitions, 10), strconv.FormatInt(in.Partitions, 10), "run.infra.partitions")
	}
	for _, s := range []struct {
		name, id, ver, cpus, mem       string
		idKey, verKey, cpusKey, memKey string
	}{
		{"broker", in.BrokerImageDigest, in.BrokerVersion, in.BrokerCPUs, in.BrokerMemory,
			FactBrokerImageID, FactBrokerVersion, FactBrokerCPUs, FactBrokerMemory},
		{"clickhouse", in.ClickHouseImageDigest, in.ClickHouseVersion, in.ClickHouseCPUs, in.ClickHouseMemory,
			FactClickHouseImageID, FactClickHouseVersion, FactClickHouseCPUs, FactClickHouseMemory},
	} {
		at := "run.infra." + s.name
		fs.set(s.idKey, strings.TrimSpace(s.id), shortID(s.id), at+"_image_digest")
		// The harness records a version it could not read as "unknown".
		if v := strings.TrimSpace(s.ver); v != "unknown" {
			fs.set(s.verKey, v, v, at+"_version")
		}
		if v, ok := cpusOfCPUMax(s.cpus); ok {
			fs.set(s.cpusKey, v, v, at+"_cpus (cpu.max read back)")
		}
		if b, err := strconv.ParseInt(strings.TrimSpace(s.mem), 10, 64); err == nil && b > 0 {
			fs.set(s.memKey, strconv.FormatInt(b, 10), memoryText(b), at+"_memory (memory.max read back)")
		}
	}
	return fs
}

// decimal writes CPUs as the shortest decimal at their grain of two
// places (C15).
func decimal(cpus float64) string {
	return strconv.FormatFloat(math.Round(cpus*100)/100, 'f', -1, 64)
}

// decimalCPUs reads a CPU count as spatec records it ("3.00").
func decimalCPUs(s string) (string, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v <= 0 {
		return "", false
	}
	return decimal(v), true
}

// cpusOfCPUMax reads a CPU cap as the harness records it, cgroup v2's cpu.max
// ("300000 100000": a quota over a period), as a decimal of CPUs; "max"
// (no cap) is stated as such.
func cpusOfCPUMax(s string) (string, bool) {
	f := strings.Fields(s)
	if len(f) == 2 && f[0] == "max" {
		return "max", true
	}
	if len(f) != 2 {
		return "", false
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return "", false
	}
	return decimal(q / p), true
}

// shortID shows an image ID by its first twelve hex characters.
func shortID(id string) string {
	id = strings.TrimSpace(id)
	if alg, hex, ok := strings.Cut(id, ":"); ok && len(hex) > 12 {
		return alg + ":" + hex[:12]
	}
	return id
}

// memoryText shows a size in bytes with a binary prefix.
func memoryText(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(b), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// memorySize reads a size as the harness's profiles write one: "64 GiB",
// or Docker's "16g" (a GiB) and "512m" (a MiB).
func memorySize(s string) (int64, bool) {
	m := memoryPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "b": 0, "k": 10, "kib": 10, "m": 20, "mib": 20, "g": 30, "gib": 30, "t": 40, "tib": 40}[strings.ToLower(m[2])]
	return int64(v * float64(uint64(1)<<shift)), true
}

var memoryPattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KkMmGgTt](?:iB)?|B)?$`)
