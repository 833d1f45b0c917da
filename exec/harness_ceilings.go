package exec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/exec/ceiling"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/runs/interop"
	"spatec.dev/spatec/schema"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// What this file knows of the reference harness's ceilings file was read
// from spate-etl/benchmark at 9d69d35: harness/src/ceiling.rs declares it
// (Ceilings, ConsumeCeiling, IngestCeiling, Provenance) and the gate that
// drops a ceiling measured under another envelope, at another message
// size or from outside its bench network; harness/src/environment.rs
// derives the infrastructure digest its provenance carries. None of it is
// imported; it is restated here.

// harnessCeilings is the harness's file, environments/ceilings/<env>.json.
// Like the harness, the import refuses a member it does not know: a figure
// in a file that reaches nothing is what the harness's own reader refuses.
// The members it keeps for a reader alone (the consume window, the
// cgroups, the landed and part counts) are read as raw JSON.
type harnessCeilings struct {
	Consume    *harnessConsume `json:"consume"`
	ClickHouse []harnessIngest `json:"clickhouse"`
}

type harnessConsume struct {
	MsgsPerS     uint64            `json:"msgs_per_s"`
	MBPerS       float64           `json:"mb_per_s"`
	MessageBytes uint64            `json:"message_bytes"`
	Partitions   int               `json:"partitions"`
	Broker       string            `json:"broker"`
	Threads      uint64            `json:"threads"`
	Client       string            `json:"client"`
	Window       json.RawMessage   `json:"window"`
	BrokerCgroup json.RawMessage   `json:"broker_cgroup"`
	Provenance   harnessProvenance `json:"provenance"`
}

type harnessIngest struct {
	Format       string              `json:"format"`
	RowsPerS     uint64              `json:"rows_per_s"`
	MBPerS       float64             `json:"mb_per_s"`
	RowBytes     uint64              `json:"row_bytes"`
	Threads      uint64              `json:"threads"`
	ClickHouse   string              `json:"clickhouse"`
	Client       string              `json:"client"`
	Sweep        []harnessSweepPoint `json:"sweep"`
	TargetCgroup json.RawMessage     `json:"target_cgroup"`
	Landed       json.RawMessage     `json:"landed"`
	Parts        json.RawMessage     `json:"parts"`
	Network      json.RawMessage     `json:"network"`
	Settle       json.RawMessage     `json:"settle"`
	StoppedAt    json.RawMessage     `json:"stopped_at"`
	Provenance   harnessProvenance   `json:"provenance"`
}

type harnessSweepPoint struct {
	Concurrency uint64 `json:"concurrency"`
	RowsPerS    uint64 `json:"rows_per_s"`
}

type harnessProvenance struct {
	Date           string `json:"date"`
	DatasetVersion string `json:"dataset_version"`
	InfraDigest    string `json:"infra_digest"`
	Host           string `json:"host"`
	Rig            string `json:"rig"`
}

// harnessInside is how the harness records a client that ran in a
// container on its bench network, as every arm does: spatec's run network.
const harnessInside = "inside"

// HarnessCeilingsFile is a ceilings file of the reference harness's, read
// and not yet judged against an environment.
type HarnessCeilingsFile struct {
	// Path is the file as given, and SHA256 the digest of its bytes
	// ("sha256:…"), which imported ceilings carry.
	Path   string
	SHA256 string
	c      harnessCeilings
}

// ReadHarnessCeilings reads the reference harness's ceilings file at path.
// An error says the file cannot be read, or is not that file: not JSON, a
// member the harness does not write, no consume ceiling, no ClickHouse
// ceiling.
func ReadHarnessCeilings(path string) (*HarnessCeilingsFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the reference harness's ceilings: %w", err)
	}
	var c harnessCeilings
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s is not the reference harness's ceilings file (environments/ceilings/<env>.json, written by `bench ceiling --measure`): %w", path, err)
	}
	switch {
	case c.Consume == nil:
		return nil, fmt.Errorf("%s holds no consume ceiling: there is no broker ceiling to import", path)
	case len(c.ClickHouse) == 0:
		return nil, fmt.Errorf("%s holds no ClickHouse ceiling: there is no ingest ceiling to import", path)
	}
	sum := sha256.Sum256(b)
	return &HarnessCeilingsFile{Path: path, SHA256: "sha256:" + hex.EncodeToString(sum[:]), c: c}, nil
}

// DatasetVersion is spatec's dataset_version of the corpus the file's
// consume ceiling was measured on, and whether spatec generates it: which
// of an environment's workloads the file can be imported for.
func (f *HarnessCeilingsFile) DatasetVersion() (string, bool) {
	return sensorbatch.SpatecLabel(f.c.Consume.Provenance.DatasetVersion)
}

// Imported says where ceilings that spatec did not measure came from.
type Imported struct {
	// From names the tool that measured them.
	From string `json:"from"`
	// File is the file as it was given, and SHA256 the digest of its bytes.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Date is the day the broker's ceiling was measured, as the file says
	// (provenance.date); each pass's is in Passes.
	Date string `json:"date"`
	// InfraDigest is the harness's digest of the infrastructure the
	// ceilings were measured under (provenance.infra_digest), and
	// InfraKey what it hashes, as the environment's caps give it:
	// broker kind|cpus|memory|ClickHouse cpus|memory|partitions.
	InfraDigest string `json:"infra_digest"`
	InfraKey    string `json:"infra_key"`
	// DatasetVersion is the harness's label of the corpus measured on.
	DatasetVersion string `json:"dataset_version"`
	// Client is where the harness's measuring client ran ("inside": a
	// container on its bench network).
	Client string `json:"client"`
	// Host is the host the harness names.
	Host string `json:"host"`
	// Passes are the file's ceilings, each with its date and the command
	// that measured it.
	Passes []ImportedPass `json:"passes"`
	// Formats maps each ClickHouse insert format of the file, in the
	// harness's name, to spatec's; NotMapped lists those spatec has no
	// name for, which were not imported.
	Formats   map[string]string `json:"formats"`
	NotMapped []string          `json:"not_mapped,omitempty"`
	// ImportedAt is when spatec imported them.
	ImportedAt time.Time `json:"imported_at"`
}

// ImportedPass is one ceiling of an imported file.
type ImportedPass struct {
	// What names it: "broker consume" or "clickhouse <format>".
	What string `json:"what"`
	Date string `json:"date"`
	Rig  string `json:"rig"`
}

// harnessTool names the reference harness in imported ceilings.
const harnessTool = "the reference harness (spate-etl/benchmark)"

// Import maps the file's ceilings onto env's ceilings for workload wl,
// whose messages are messageBytes long on average over env's dataset.
//
// Every fact the file states is held to env's plan first, and any that
// differs refuses the import (a *Refusal naming each): ceilings measured
// under other infrastructure caps (the harness's infrastructure digest,
// recomputed from env's caps as the harness derives it, and the broker's
// and ClickHouse's images and caps as the file writes them), at another
// partition count, at a message size more than 5% off, on another corpus,
// or from outside the services' network are stale (C12), and importing
// them would gate arms against a ceiling that is not theirs. Among the
// ClickHouse formats, Native must be there (the gate holds every arm to
// it); a format spatec has no name for is left out and listed.
func (f *HarnessCeilingsFile) Import(env schema.Environment, wl schema.Workload, messageBytes float64, now time.Time, version string) (*Ceilings, error) {
	c := f.c
	plan := &schema.Plan{Env: env, Workload: wl}
	key := harnessInfraKey(env)
	digest := shortDigest(key)
	var why reasons

	// Where the harness's clients ran, and where env's arms reach the
	// services from.
	if measuredFrom(env) != MeasuredInNetwork {
		why.add("", "the harness measured from a container on its bench network, and %s's services are not on a run network of spatec's (network %q), so no arm reaches them the way the harness's client did", env.Name, env.Network)
	}
	checkPass := func(what, client string, p harnessProvenance) {
		if client != harnessInside {
			why.add(what, "measured by a client %s, not %q (a container on the harness's bench network, as every arm runs)", describeClient(client), harnessInside)
		}
		switch {
		case p.InfraDigest == "":
			why.add(what, "no infrastructure digest stated, so nothing says which caps it was measured under")
		case p.InfraDigest != digest:
			why.add(what, "measured under the harness's infrastructure %s, and %s's caps, written as the harness writes its own (%s), are %s", p.InfraDigest, env.Name, key, digest)
		}
		if v, ok := sensorbatch.SpatecLabel(p.DatasetVersion); !ok || v != wl.DatasetVersion {
			why.add(what, "measured on the harness's corpus %s, %s; workload %s of %s is %s", orUnstated(p.DatasetVersion), spatecName(p.DatasetVersion), wl.Name, env.Name, wl.DatasetVersion)
		}
	}

	b := c.Consume
	const consume = "the broker's consume ceiling"
	checkPass(consume, b.Client, b.Provenance)
	if b.Partitions != env.Partitions {
		why.add(consume, "measured at %d partitions, and %s has %d", b.Partitions, env.Name, env.Partitions)
	}
	if float64(b.MessageBytes) == 0 || math.Abs(float64(b.MessageBytes)-messageBytes) > 0.05*messageBytes {
		why.add(consume, "measured at %d-byte messages, and %s's %s messages are %.0f bytes on average (more than 5%% off)", b.MessageBytes, env.Name, wl.Name, messageBytes)
	}
	if b.MsgsPerS == 0 || b.MBPerS <= 0 {
		why.add(consume, "0: the harness measured none")
	}
	checkService(&why, consume, "the broker", b.Broker, env.Infra.Broker, false)

	figures := ceiling.Figures{}
	figures.Broker.MessagesPerSec = float64(b.MsgsPerS)
	// The harness's megabyte is 10^6 bytes (harness/src/ceiling.rs, mb_to_bytes).
	figures.Broker.BytesPerSec = b.MBPerS * 1e6
	imp := &Imported{
		From: harnessTool, File: f.Path, SHA256: f.SHA256, Date: b.Provenance.Date,
		InfraDigest: b.Provenance.InfraDigest, InfraKey: key, DatasetVersion: b.Provenance.DatasetVersion,
		Client: b.Client, Host: b.Provenance.Host, Formats: map[string]string{}, ImportedAt: now.UTC(),
		Passes: []ImportedPass{{What: "broker consume", Date: b.Provenance.Date, Rig: b.Provenance.Rig}},
	}
	hasNative := false
	for _, in := range c.ClickHouse {
		name, ok := ceiling.HarnessFormat(in.Format)
		if !ok {
			imp.NotMapped = append(imp.NotMapped, in.Format)
			continue
		}
		what := ingestSubject + in.Format
		checkPass(what, in.Client, in.Provenance)
		checkService(&why, what, "ClickHouse", in.ClickHouse, env.Infra.ClickHouse, true)
		if in.RowsPerS == 0 {
			why.add(what, "0: the harness measured none")
		}
		fc := ceiling.FormatCeiling{Format: name, RowsPerSec: float64(in.RowsPerS), Concurrency: int(in.Threads)}
		for _, s := range in.Sweep {
			fc.Levels = append(fc.Levels, chstore.IngestLevel{Concurrency: int(s.Concurrency), RowsPerSec: float64(s.RowsPerS)})
		}
		figures.ClickHouse.Formats = append(figures.ClickHouse.Formats, fc)
		if name == ceiling.Native {
			hasNative = true
			figures.ClickHouse.Format, figures.ClickHouse.RowsPerSec = fc.Format, fc.RowsPerSec
			figures.ClickHouse.Concurrency, figures.ClickHouse.Levels = fc.Concurrency, fc.Levels
		}
		imp.Formats[in.Format] = name
		imp.Passes = append(imp.Passes, ImportedPass{What: "clickhouse " + in.Format, Date: in.Provenance.Date, Rig: in.Provenance.Rig})
	}
	if !hasNative {
		var have []string
		for _, in := range c.ClickHouse {
			have = append(have, in.Format)
		}
		why.add("", "the file has no ClickHouse ceiling in native (its formats: %s), and Native's is the one the gate holds every arm to", strings.Join(have, ", "))
	}
	measured, err := time.Parse(time.DateOnly, b.Provenance.Date)
	if err != nil {
		why.add(consume, "dated %q, not a YYYY-MM-DD date, so when it was measured is unknown", b.Provenance.Date)
	}
	if len(why.order) > 0 {
		return nil, &Refusal{fmt.Sprintf("C12: the reference harness's ceilings in %s (%s) do not describe %s's plan, and importing them would gate its arms against ceilings that are not theirs: %s",
			f.Path, f.SHA256, env.Name, why.String())}
	}
	slices.SortFunc(figures.ClickHouse.Formats, func(a, b ceiling.FormatCeiling) int { return strings.Compare(a.Format, b.Format) })
	return &Ceilings{
		Env: env.Name, InfraDigest: plan.InfraDigest(), Partitions: env.Partitions, Workload: wl.Name,
		MessageBytes: int(b.MessageBytes), Figures: figures, MeasuredFrom: MeasuredInNetwork,
		MeasuredAt: measured.UTC(), SpatecVersion: version, Imported: imp,
	}, nil
}

// ingestSubject names a ClickHouse ceiling of the file, before its format.
const ingestSubject = "the ClickHouse ceiling in "

// reasons gathers why a file does not describe a plan, each reason once
// with every ceiling it holds for: the same caps differ for every pass of
// the file.
type reasons struct {
	order    []string
	subjects map[string][]string
}

// add records a reason (what follows the subjects) of subject, one of the
// file's ceilings, or of the file ("").
func (r *reasons) add(subject, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	if r.subjects == nil {
		r.subjects = map[string][]string{}
	}
	if _, ok := r.subjects[why]; !ok {
		r.order = append(r.order, why)
	}
	if subject != "" {
		r.subjects[why] = append(r.subjects[why], subject)
	}
}

// String writes each reason after the ceilings it holds for: "the
// broker's consume ceiling and the ClickHouse ceilings in native,
// rowbinary: measured under …".
func (r *reasons) String() string {
	out := make([]string, len(r.order))
	for i, why := range r.order {
		var named, formats []string
		for _, s := range r.subjects[why] {
			if f, ok := strings.CutPrefix(s, ingestSubject); ok {
				formats = append(formats, f)
			} else {
				named = append(named, s)
			}
		}
		switch len(formats) {
		case 0:
		case 1:
			named = append(named, ingestSubject+formats[0])
		default:
			named = append(named, "the ClickHouse ceilings in "+strings.Join(formats, ", "))
		}
		out[i] = why
		if len(named) > 0 {
			out[i] = strings.Join(named, " and ") + ": " + why
		}
	}
	return strings.Join(out, "; ")
}

// checkService holds what the file writes of a service ("<image>, <n>
// CPU[, <m> memory]", for a reader of the harness's) in one of its
// ceilings to the service env declares: the same repository and tag, and
// the same caps. withMemory says whether the file writes the memory (it
// does for ClickHouse; the broker's memory is in the infrastructure digest
// alone).
func checkService(why *reasons, subject, service, written string, svc schema.Service, withMemory bool) {
	m := serviceWritten.FindStringSubmatch(strings.TrimSpace(written))
	if m == nil {
		why.add(subject, "%s written %q, not as \"<image>, <n> CPU[, <m> memory]\", so its image and caps cannot be held to the environment's", service, written)
		return
	}
	declared := ""
	if svc.Image != nil {
		declared = svc.Image.Ref
	}
	if interop.ImageName(m[1]) != interop.ImageName(declared) {
		why.add(subject, "%s ran image %s, and the environment declares %s", service, m[1], orUnstated(declared))
	}
	if cpus, err := strconv.ParseFloat(m[2], 64); err != nil || math.Abs(cpus-svc.CPUs) > 0.005 {
		why.add(subject, "%s had %s CPUs, and the environment gives it %s", service, m[2], strconv.FormatFloat(svc.CPUs, 'f', -1, 64))
	}
	if withMemory {
		if m[3] == "" {
			why.add(subject, "%s written without its memory (%q)", service, written)
		} else if got := dockerMemory(svc.Memory); !strings.EqualFold(m[3], got) {
			why.add(subject, "%s had %s of memory, and the environment gives it %s", service, m[3], got)
		}
	}
}

// serviceWritten is how the harness writes a service for a reader:
// "redpandadata/redpanda:v26.1.13, 3 CPU",
// "clickhouse/clickhouse-server:26.3, 16 CPU, 16g memory".
var serviceWritten = regexp.MustCompile(`^([^,\s]+),\s*([0-9.]+) CPUs?(?:,\s*(\S+) memory)?$`)

// harnessInfraKey is what the harness hashes into its infrastructure
// digest (harness/src/environment.rs, Environment::infra_digest), from
// env's caps written as the harness writes its own: the broker's kind (the
// last element of its image's repository, redpanda), its CPUs and memory,
// ClickHouse's CPUs and memory, and the partitions, joined by "|".
func harnessInfraKey(env schema.Environment) string {
	kind := ""
	if env.Infra.Broker.Image != nil {
		kind = path.Base(strings.SplitN(interop.ImageName(env.Infra.Broker.Image.Ref), ":", 2)[0])
	}
	b, ch := env.Infra.Broker, env.Infra.ClickHouse
	return strings.Join([]string{kind,
		strconv.FormatFloat(b.CPUs, 'f', -1, 64), dockerMemory(b.Memory),
		strconv.FormatFloat(ch.CPUs, 'f', -1, 64), dockerMemory(ch.Memory),
		strconv.Itoa(env.Partitions)}, "|")
}

// shortDigest is the harness's short digest: twelve hex characters of
// SHA-256.
func shortDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// dockerMemory writes a memory size as the harness's environment files do,
// in Docker's units: 8g for 8 GiB, 512m for 512 MiB, else bytes.
func dockerMemory(b int64) string {
	const mib, gib = 1 << 20, 1 << 30
	switch {
	case b > 0 && b%gib == 0:
		return strconv.FormatInt(b/gib, 10) + "g"
	case b > 0 && b%mib == 0:
		return strconv.FormatInt(b/mib, 10) + "m"
	}
	return strconv.FormatInt(b, 10)
}

func describeClient(client string) string {
	if client == "" {
		return "the file does not place (it predates the field)"
	}
	return fmt.Sprintf("recorded as %q", client)
}

func orUnstated(s string) string {
	if s == "" {
		return "(not stated)"
	}
	return s
}

// spatecName says what spatec calls one of the harness's corpus labels.
func spatecName(harnessVersion string) string {
	if v, ok := sensorbatch.SpatecLabel(harnessVersion); ok {
		return "which is spatec's " + v
	}
	return "which is no corpus spatec generates"
}
