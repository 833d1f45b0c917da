// Package record defines the result record every spatec run leaves behind,
// and the append-only JSONL log that holds them (contract C14).
//
// Every run is recorded, whatever its outcome: a refusal or a failure is a
// finding, and a log that only kept the good runs would let a reader believe an
// arm was never tried. A record therefore carries its status, the numbers when
// there are any, and enough provenance (digests of the environment, the plan
// and the infrastructure caps, the spatec version, host facts, the cgroup
// values read back) to tell which other records it may be compared with.
//
// Records live one per line in results/<env>/<entrant>/<YYYY-MM>.jsonl. The
// log is only ever appended to, under an exclusive lock, and fsync'd; Validate
// walks a results tree and reports every defect with its file and line.
package record

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// SchemaV1 is the schema version this package writes and reads. A reader
// meeting any other version refuses the record rather than guessing what its
// fields meant.
const SchemaV1 = "spatec.record/v1"

// HarnessVersion is the version of the measurement protocol: the window
// definition, the drain and completeness rules, the sampler semantics and the
// gates. Bump it when a change moves numbers; records with different harness
// versions are never aggregated together.
const HarnessVersion = 1

// Status says whether a record carries publishable numbers and, if not, why.
type Status string

// The four outcomes of a run. Every one of them is recorded.
const (
	// StatusOK: the drain completed, every gate passed.
	StatusOK Status = "ok"
	// StatusInfraBound: the drain completed, but the arm ran above 70% of
	// a broker or ClickHouse ceiling (C12), so its numbers may describe the
	// infrastructure rather than the arm. Kept, and marked.
	StatusInfraBound Status = "infra_bound"
	// StatusRefused: a contract check stopped the run before the
	// measurement window opened (cap mismatch, version mismatch, topic depth).
	StatusRefused Status = "refused"
	// StatusFailed: the run started and did not produce a complete
	// measurement (timeout short of N rows, crash, interruption).
	StatusFailed Status = "failed"
)

// Statuses lists the known statuses, best first.
var Statuses = []Status{StatusOK, StatusInfraBound, StatusRefused, StatusFailed}

// Known reports whether s is one of the four statuses.
func (s Status) Known() bool { return slices.Contains(Statuses, s) }

// Severity orders statuses for "worst across repetitions wins": failed (3) >
// refused (2) > infra_bound (1) > ok (0). A failure outranks a refusal
// because it says something about the arm itself (it ran and did not
// finish); a refusal only says the run could not be measured. An unknown
// status ranks above everything so that it can never hide behind an ok.
func (s Status) Severity() int {
	switch s {
	case StatusOK:
		return 0
	case StatusInfraBound:
		return 1
	case StatusRefused:
		return 2
	case StatusFailed:
		return 3
	}
	return 4
}

// CarriesMeasurement reports whether a record of this status has numbers
// that may be aggregated. A failed run's partial throughput is not a
// measurement of the arm, and a refused run has none.
func (s Status) CarriesMeasurement() bool { return s == StatusOK || s == StatusInfraBound }

// KnownUnits is the closed set of units a metric may carry. A consumer scales
// and labels a number by its unit, so a unit nobody has thought about is an
// error, not a new column. Add one here deliberately, together with the code
// that emits it.
var KnownUnits = []string{"rows/s", "msg/s", "bytes/s", "cores", "bytes", "s", "count", "ratio"}

// KnownUnit reports whether u is in KnownUnits.
func KnownUnit(u string) bool { return slices.Contains(KnownUnits, u) }

// Metric names the report reads and the executor writes. The names are the
// contract between the two; C7, C8 and C13 require most of them on every
// measured record.
//
// Two throughputs are recorded, each over a window of its own, and each
// window's bounds are in run.window:
//
//   - RowsPerS is spatec's, the one a report ranks by: the N distinct rows
//     over WindowSeconds, spatec's window (run.window.opened_at to
//     closed_at). It opens when spatec starts watching the table: on Docker
//     once every container of the arm is started and its caps verified
//     (C6), no row having landed yet; on Kubernetes at the start of the
//     arm's first container. It closes at the poll (every 100 ms) that saw
//     the distinct rows reach N.
//   - HarnessRowsPerS is the public reference harness's (spate-etl/benchmark,
//     harness/src/sampler.rs SutCost::rows_per_s over window_s): the rows
//     ClickHouse counted (count(), duplicates included) at the first poll
//     that saw count() reach N, over HarnessWindowSeconds
//     (run.window.harness), from the start of the arm's last container
//     (the harness starts its sampler once every container of the arm is
//     running) to that poll. It is what an export to schema 2 calls
//     rows_per_s. HarnessSpan computes it from the record and its series.
//
// Every other rate (MsgsPerS, BytesPerS) and the means (cores) are over
// spatec's window.
const (
	RowsPerS = "rows_per_s" // distinct rows landed / spatec's window (rows/s); the rate a report ranks by
	// HarnessRowsPerS is spatec's approximation of the reference
	// harness's rate: count() at the first poll that reached N over
	// HarnessWindowSeconds. The harness divides by its 1 Hz sampler's
	// window instead, a whole number of seconds that this one comes
	// within about a second of (HarnessSpan says how they differ).
	HarnessRowsPerS = "harness_rows_per_s"
	// HarnessWindowSeconds is the length of the window approximating the
	// reference harness's: from the arm's last container start to the
	// first poll (every 100 ms) that counted N rows (run.window.harness).
	HarnessWindowSeconds = "harness_window_s"
	// RowsInFlight is the rows the arm may hold at once by its
	// configuration (#Entrant.inFlight), for memory per row in flight.
	RowsInFlight = "rows_in_flight"
	MsgsPerS     = "msgs_per_s"  // broker messages drained / window (msg/s)
	BytesPerS    = "bytes_per_s" // broker bytes drained / window (bytes/s)

	CoresUsed             = "cores_used"               // arm total: data plane + control plane (C8)
	DataPlaneCoresUsed    = "data_plane_cores_used"    // data plane alone (C8)
	ControlPlaneCoresUsed = "control_plane_cores_used" // control plane alone (C2, C8)

	PeakAnonBytes              = "peak_anon_bytes"               // arm anon+shmem peak (C7, C8)
	DataPlanePeakAnonBytes     = "data_plane_peak_anon_bytes"    // data plane anon+shmem peak (C7, C8)
	PeakShmemBytes             = "peak_shmem_bytes"              // shmem component of the arm peak (C7)
	DataPlanePeakShmemBytes    = "data_plane_peak_shmem_bytes"   // shmem component, data plane (C7)
	MemoryPeakBytes            = "memory_peak_bytes"             // memory.peak / max_usage_in_bytes, arm (C7)
	DataPlaneMemoryPeakBytes   = "data_plane_memory_peak_bytes"  // the same, data plane (C7)
	ExpectedRows               = "expected_rows"                 // N, fixed before the arm starts (C13)
	DistinctRows               = "distinct_rows"                 // distinct rows landed (C13)
	LandedRows                 = "landed_rows"                   // count(), duplicates included (C13)
	DuplicateRows              = "duplicate_rows"                // count − distinct (C13)
	WindowSeconds              = "window_s"                      // length of spatec's window (run.window.opened_at to closed_at)
	JVMHeapConfiguredBytes     = "jvm_heap_configured_bytes"     // C9
	JVMHeapCommittedPeakBytes  = "jvm_heap_committed_peak_bytes" // C9
	JVMHeapLivePeakBytes       = "jvm_heap_live_peak_bytes"      // C9
	InfraBrokerConsumeShare    = "infra_broker_consume_share"    // arm rate / broker ceiling (C12)
	InfraClickHouseIngestShare = "infra_clickhouse_ingest_share" // arm rate / ClickHouse ceiling (C12)
	HostOutsideCores           = "host_outside_cores"            // the host's CPU outside the run's containers over the window
	HostStealCores             = "host_steal_cores"              // CPU the hypervisor stole from the host over the window
	SpatecCores                = "spatec_cores"                  // spatec's own CPU over the window: driver, sampler (part of host_outside_cores)
)

// The evidence a run gives.
const (
	// EvidenceMeasured: the run executed a plan document reviewed before
	// it ran (spatec exec plan.json), so what it measured was fixed first.
	EvidenceMeasured = "measured"
	// EvidenceExploratory: the plan was resolved when the run started.
	EvidenceExploratory = "exploratory"
)

// Flags a record may carry. Flags are machine-readable caveats; the note is
// prose for people.
const (
	FlagHeadroomUnproven = "headroom_unproven" // no usable ceiling to gate against (C12)
	FlagPeakLifetime     = "peak_lifetime"     // memory.peak could not be reset: the peak covers the container's lifetime
	FlagInterrupted      = "interrupted"       // the run was stopped by a signal
	FlagJVMHeapUnread    = "jvm_heap_unread"   // a JVM container's GC log could not be read: its heap figures (C9) are missing
	FlagJVMFlagsUnread   = "jvm_flags_unread"  // a JVM container's object alignment or compressed-oops mode (C9) could not be read from the JVM: neither recorded nor checked
	FlagRowsUncounted    = "rows_uncounted"    // ClickHouse could not count the rows landed: distinct_rows (or landed_rows) is absent, not 0
	FlagUnderSampled     = "under_sampled"     // the window held too few sampler readings for its peaks and means to cover it
	FlagHostBusy         = "host_busy"         // the host spent more CPU outside the run (and lost more to steal) than the caps leave of its cores
)

// CompressedOopsModes are the compressed-oops modes a JVM runs in, as
// HotSpot names them (its gc+init log), the values of a container's
// jvm_compressed_oops_mode.
var CompressedOopsModes = []string{"32-bit", "Zero based", "Non-zero disjoint base", "Non-zero based", "Disabled"}

// Record is one run of one arm: one line of the results log.
type Record struct {
	Schema  string            `json:"schema"`
	Status  Status            `json:"status"`
	RunID   string            `json:"run_id"`
	Rep     int               `json:"rep"`
	Reps    int               `json:"reps"`
	SUT     SUT               `json:"sut"`
	Run     Run               `json:"run"`
	Variant map[string]any    `json:"variant"`
	Metrics map[string]Metric `json:"metrics"`
	Flags   []string          `json:"flags"`
	// Note is free text for a reader: the refusal reason, the failure
	// cause with both row counts, the tail of a crashed container's log.
	Note string `json:"note,omitempty"`
	// Series names the run's window over time, kept beside the log.
	Series *SeriesRef `json:"series,omitempty"`
	// Gates are the correctness gates the drain was judged by.
	Gates []Gate `json:"gates,omitempty"`
	// Scenario, on a run of a failure scenario, is the fault injected
	// mid-drain and what the arm did through it. Such a run is never
	// ranked beside the comparison's.
	Scenario *Scenario `json:"scenario,omitempty"`
}

// Scenario is a failure scenario's run: the fault as declared and as
// injected, and what the arm did through it. Times are milliseconds from
// the opening of the window (run.window.opened_at), on the clock of the
// series' rows.
type Scenario struct {
	Name      string  `json:"name"`
	Component string  `json:"component"`
	Action    string  `json:"action"`
	PauseS    int     `json:"pause_s,omitempty"`
	At        float64 `json:"at"`
	RecoveryS int     `json:"recovery_s"`
	// Restart is the data plane's restart policy; Guarantee the delivery
	// guarantee the arm declares, which the verdict holds it to.
	Restart   string `json:"restart"`
	Guarantee string `json:"guarantee"`
	// Injected says the fault happened; a drain that ended first (or an
	// action the engine refused) leaves it false, with Note saying why.
	Injected bool `json:"injected"`
	// FaultMS is when the fault began, FaultEndMS when spatec's part of it
	// ended (a restart returned, a pause was lifted, a killed service was
	// started again; for a killed data plane, its restart policy had it
	// running again, or the recovery bound passed).
	FaultMS    int64 `json:"fault_ms"`
	FaultEndMS int64 `json:"fault_end_ms"`
	// LandedAtFault is the rows landed (duplicates included) at the last
	// poll before the fault.
	LandedAtFault int64 `json:"landed_at_fault"`
	// FirstRowMS is how long after the fault began a row landed again,
	// absent when none did; RateBackMS how long until the rate over a
	// trailing RateSpanMS was back to RateShare of the pre-fault rate,
	// absent when it never was before the drain ended.
	FirstRowMS *int64  `json:"first_row_after_fault_ms,omitempty"`
	RateBackMS *int64  `json:"rate_back_after_fault_ms,omitempty"`
	RateSpanMS int64   `json:"rate_span_ms"`
	RateShare  float64 `json:"rate_share"`
	// Outran says every expected row had landed by FaultEndMS, with the
	// arm seen running again within the bound: the drain ended before a
	// recovery could be timed, so FirstRowMS and RateBackMS are absent
	// for that reason, and the verdict comes from the counts alone.
	Outran bool `json:"outran,omitempty"`
	// PreFaultRowsPerS is the run's rate by the fault: the rows landed
	// then over the window until then, as the run's own rate is measured.
	PreFaultRowsPerS float64 `json:"pre_fault_rows_per_s"`
	// Lost is the expected rows minus the distinct rows landed; Duplicates
	// the rows landed minus the distinct ones, all of which the table
	// kept. Dedup says what the table's engine does with a repeated
	// insert, as read from the server before the window ("" when it could
	// not be read); DuplicatedInsertedBlocks is how much its
	// deduplication absorbed instead: the server's profile event of that
	// name over the window (ClickHouse's unit: 26.9 adds 2 for one
	// repeated insert into one partition), 0 where the table has no
	// window, absent where it could not be read or did not survive the
	// fault (a restarted server starts its counters again).
	Lost                     int64  `json:"lost_rows"`
	Duplicates               int64  `json:"duplicate_rows"`
	Dedup                    string `json:"dedup,omitempty"`
	DuplicatedInsertedBlocks *int64 `json:"duplicated_inserted_blocks,omitempty"`
	// Verdict is recovered, recovered-with-duplicates, recovered-with-loss
	// or not-recovered; Held says whether that is within the declared
	// guarantee.
	Verdict string `json:"verdict"`
	Held    bool   `json:"held"`
	// Note says what spatec did and saw, in words.
	Note string `json:"note,omitempty"`
}

// Scenario verdicts.
const (
	VerdictRecovered    = "recovered"
	VerdictDuplicates   = "recovered-with-duplicates"
	VerdictLoss         = "recovered-with-loss"
	VerdictNotRecovered = "not-recovered"
	VerdictNotInjected  = "not-injected"
)

// SUT is the system under test as it actually ran.
type SUT struct {
	Entrant string `json:"entrant"`
	// Variant is the variant name, empty for the entrant's default.
	Variant string `json:"variant"`
	// Study names the study the variant is a point of.
	Study string `json:"study,omitempty"`
	// Footprint, on a point of a footprint study, is the cap the data
	// plane was given in place of the environment's envelope: such a run
	// left the envelope on purpose and is never ranked beside the
	// comparison's.
	Footprint *Footprint `json:"footprint,omitempty"`
	// Version is the version read inside the image (C16); VersionPinned
	// is what the entrant declared. They differ only on a refused record.
	Version       string      `json:"version"`
	VersionPinned string      `json:"version_pinned,omitempty"`
	Containers    []Container `json:"containers"`
}

// Footprint is a footprint study's point: the cap on its axis (bytes of
// memory, or CPUs) and the environment's envelope on that axis.
type Footprint struct {
	Axis string  `json:"axis"`
	Cap  float64 `json:"cap"`
	Full float64 `json:"full"`
	// Fraction is the share of the envelope's rate the study holds a
	// point to.
	Fraction float64 `json:"fraction"`
}

// Container summarises one container as planned and started.
type Container struct {
	Name string `json:"name"`
	// Role is data-plane or control-plane for an arm; infra containers
	// carry their service name (broker, clickhouse).
	Role        string `json:"role"`
	Image       string `json:"image"`
	ImageDigest string `json:"image_digest"`
	// Recipe is the digest of the Debian recipe the image was built from,
	// for an image spatec built from packages.
	Recipe string `json:"recipe_digest,omitempty"`
	// Version is an infrastructure service's version, read inside its
	// image.
	Version string `json:"version,omitempty"`
	// CPUs is the planned decimal CPU count as written, e.g. "1.50".
	CPUs        string `json:"cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	// Node is the Kubernetes node the container's pod ran on, where its
	// caps were read back and its usage sampled; empty on Docker.
	Node string `json:"node,omitempty"`
	// JVMObjectAlignmentBytes is the object alignment a JVM container ran
	// with, from its final flags (ObjectAlignmentInBytes), and
	// JVMCompressedOopsMode its compressed-oops mode in HotSpot's words:
	// "32-bit" (unscaled), "Zero based", "Non-zero disjoint base",
	// "Non-zero based" (from its GC log), or "Disabled" (its flags'
	// UseCompressedOops). They are what C9's ceiling reasons with, as the
	// JVM says it ran; absent where it could not be read (flag
	// jvm_flags_unread) and for a container that runs no JVM.
	JVMObjectAlignmentBytes int    `json:"jvm_object_alignment_bytes,omitempty"`
	JVMCompressedOopsMode   string `json:"jvm_compressed_oops_mode,omitempty"`
	// StartedAt is when an arm's container started (the engine's start
	// returned, or on Kubernetes the start its node recorded): the latest
	// of them opens the reference harness's window (run.window.harness).
	StartedAt time.Time `json:"started_at,omitzero"`
}

// Run is the provenance of a record: what it may be compared with.
type Run struct {
	Env       string `json:"env"`
	EnvDigest string `json:"env_digest"`
	// PlanDigest is the digest of the resolved plan this run executed.
	PlanDigest string `json:"plan_digest"`
	// InfraDigest is the digest of the infrastructure caps (broker,
	// ClickHouse) so records under other infrastructure are told apart.
	InfraDigest    string `json:"infra_digest"`
	SpatecVersion  string `json:"spatec_version"`
	SpatecCommit   string `json:"spatec_commit"`
	HarnessVersion int    `json:"harness_version"`
	// Evidence says how far the run may be cited: measured (its plan was
	// reviewed, its digest fixed, before it ran) or exploratory (resolved
	// on the spot).
	Evidence  string      `json:"evidence,omitempty"`
	StartedAt time.Time   `json:"started_at"`
	EndedAt   time.Time   `json:"ended_at"`
	Host      Host        `json:"host"`
	Infra     []Container `json:"infra,omitempty"`
	// Cgroups holds the cap files read back from each running container
	// (C6), container name -> file name -> raw contents, exactly as the
	// kernel wrote them so a reader can re-check them.
	Cgroups map[string]map[string]string `json:"cgroups"`
	// CgroupsEnd holds the same files read again at the end of the
	// window: C6 holds the caps for the whole window, and a reader can
	// compare the two readings.
	CgroupsEnd map[string]map[string]string `json:"cgroups_end,omitempty"`
	Dataset    Dataset                      `json:"dataset"`
	Window     Window                       `json:"window"`
	// Ceilings holds the ceilings the run was gated against (C12), when
	// there were usable ones.
	Ceilings map[string]Metric `json:"ceilings,omitempty"`
	// CeilingsMeasuredFrom says where the ceilings' measuring client ran:
	// inside the run's network, or on the host.
	CeilingsMeasuredFrom string `json:"ceilings_measured_from,omitempty"`
}

// Host holds the facts of the machine the run happened on.
type Host struct {
	Cores         int    `json:"cores"`
	MemoryBytes   int64  `json:"memory_bytes"`
	Kernel        string `json:"kernel"`
	CgroupVersion string `json:"cgroup_version"`
	EngineVersion string `json:"engine_version"`
}

// Dataset identifies the corpus the arm drained.
type Dataset struct {
	// Workload names the workload the plan ran (sensor-batch, json-rows).
	Workload string `json:"workload,omitempty"`
	// Version names the corpus definition (the workload's
	// dataset_version); records over different datasets are never
	// aggregated together.
	Version string `json:"version"`
	// Messages is the broker's own message count (high watermarks) and
	// ExpectedRows the N it implies (C13): the rows a correct arm lands,
	// after the transform's filters.
	Messages     int64 `json:"messages"`
	ExpectedRows int64 `json:"expected_rows"`
	// Bytes is the messages' size on the wire, in all.
	Bytes int64 `json:"bytes,omitempty"`
}

// Gate is one correctness gate a drain was judged by, after the arm
// stopped and the table quiesced: what it expected and what it found, by
// quantity (decimal strings: the checksum's sums outgrow 64 bits).
type Gate struct {
	// Name is loss, checksum or duplicates.
	Name     string            `json:"name"`
	Passed   bool              `json:"passed"`
	Expected map[string]string `json:"expected"`
	Found    map[string]string `json:"found"`
	// Note says why a gate failed, or why it could not be read.
	Note string `json:"note,omitempty"`
}

// The gates.
const (
	// GateLoss: the distinct row identities landed equal the rows the
	// dataset yields (C13).
	GateLoss = "loss"
	// GateChecksum: every sum of the workload's checksum over the distinct
	// rows equals the generator's closed form: the arm did the work.
	GateChecksum = "checksum"
	// GateDuplicates: every duplicate is an exact copy of its row (how
	// many there are is the duplicate_rows metric, never a failure).
	GateDuplicates = "duplicates"
)

// Window describes the measurement windows: spatec's, which bounds how
// finely two runs can be told apart, and the reference harness's.
type Window struct {
	SamplerPeriodS float64 `json:"sampler_period_s"`
	// DurationS is the length of spatec's window (the metric window_s),
	// which rows_per_s divides by.
	DurationS float64 `json:"duration_s"`
	// OpenedAt and ClosedAt bound spatec's window: from when spatec began
	// to watch the table to the poll that saw N distinct rows (or the end
	// of waiting). OpenedAt is also the zero of the series' rows.t_ms.
	OpenedAt time.Time `json:"opened_at,omitzero"`
	ClosedAt time.Time `json:"closed_at,omitzero"`
	// Harness is the window approximating the reference harness's
	// (HarnessSpan), which harness_rows_per_s divides by; absent when the
	// drain did not complete or the arm's start was not recorded.
	Harness *Span `json:"harness,omitempty"`
}

// Resolution is the relative resolution of a rate measured over the window:
// one sampler period over the window length. Two throughputs closer than this
// fraction cannot be distinguished by the instrument. It is 0 when either
// figure is missing.
func (w Window) Resolution() float64 {
	if w.SamplerPeriodS <= 0 || w.DurationS <= 0 {
		return 0
	}
	return w.SamplerPeriodS / w.DurationS
}

// Metric is one measured quantity. Its unit and direction travel with the
// number so that no consumer has to guess either.
type Metric struct {
	Value          float64 `json:"value"`
	Unit           string  `json:"unit"`
	HigherIsBetter bool    `json:"higher_is_better"`
}

// NewRunID returns a fresh UUIDv7 run id: unique, and ordered by creation
// time so a log sorts by when its runs started.
func NewRunID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("generating a UUIDv7 run id: %w", err)
	}
	return id.String(), nil
}

// Check returns every defect of the record itself, one message each, without
// a location. An empty result means the record is complete.
func (r *Record) Check() []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	if r.Schema != SchemaV1 {
		add("schema is %q; this spatec reads %q", r.Schema, SchemaV1)
	}
	if !r.Status.Known() {
		add("status %q is not one of %s", r.Status, statusList())
	}
	if id, err := uuid.Parse(r.RunID); err != nil {
		add("run_id %q is not a UUID: %v", r.RunID, err)
	} else if id.Version() != 7 {
		add("run_id %s is a version %d UUID; spatec writes UUIDv7", r.RunID, id.Version())
	}
	if r.Reps < 1 || r.Rep < 1 || r.Rep > r.Reps {
		add("rep %d of %d: rep must be between 1 and reps, and reps at least 1", r.Rep, r.Reps)
	}
	if r.SUT.Entrant == "" {
		add("sut.entrant is empty: the record cannot say which arm ran")
	}
	if f := r.SUT.Footprint; f != nil {
		// A point of a footprint study must say where it stood, or a
		// report could not keep it from the comparison's runs.
		switch {
		case f.Axis != "memory" && f.Axis != "cpus":
			add("sut.footprint.axis %q is not memory or cpus", f.Axis)
		case !(f.Cap > 0 && f.Cap <= f.Full):
			add("sut.footprint.cap %.2f is not between 0 and the envelope's %.2f", f.Cap, f.Full)
		case !(f.Fraction > 0 && f.Fraction < 1):
			add("sut.footprint.fraction %v is not a share between 0 and 1", f.Fraction)
		case r.SUT.Study == "":
			add("sut.footprint is set but sut.study does not name the study")
		}
	}

	if sc := r.Scenario; sc != nil {
		switch {
		case sc.Name == "" || sc.Component == "" || sc.Action == "":
			add("scenario names no scenario, component or action")
		case !(sc.At > 0 && sc.At < 1):
			add("scenario.at %v is not a share between 0 and 1", sc.At)
		case !slices.Contains([]string{VerdictRecovered, VerdictDuplicates, VerdictLoss, VerdictNotRecovered, VerdictNotInjected}, sc.Verdict):
			add("scenario.verdict %q is not one of recovered, recovered-with-duplicates, recovered-with-loss, not-recovered, not-injected", sc.Verdict)
		case sc.Injected && sc.FaultEndMS < sc.FaultMS:
			add("scenario.fault_end_ms %d is before fault_ms %d", sc.FaultEndMS, sc.FaultMS)
		case sc.Outran && (sc.FirstRowMS != nil || sc.RateBackMS != nil):
			add("scenario.outran says no recovery was timed, yet first_row_after_fault_ms or rate_back_after_fault_ms is set")
		case r.SUT.Footprint != nil:
			add("a record is a scenario's run or a footprint point, not both")
		}
	}

	// Provenance (C14): without these a record cannot say what it may be
	// compared with, and a report would silently compare across the gap.
	missing := []string{}
	for _, f := range []struct {
		name  string
		empty bool
	}{
		{"run.env", r.Run.Env == ""},
		{"run.env_digest", r.Run.EnvDigest == ""},
		{"run.plan_digest", r.Run.PlanDigest == ""},
		{"run.infra_digest", r.Run.InfraDigest == ""},
		{"run.spatec_version", r.Run.SpatecVersion == ""},
		{"run.harness_version", r.Run.HarnessVersion == 0},
		{"run.host.cores", r.Run.Host.Cores <= 0},
		{"run.host.kernel", r.Run.Host.Kernel == ""},
		{"run.host.cgroup_version", r.Run.Host.CgroupVersion == ""},
		{"run.host.engine_version", r.Run.Host.EngineVersion == ""},
		{"run.dataset.version", r.Run.Dataset.Version == ""},
		{"run.started_at", r.Run.StartedAt.IsZero()},
	} {
		if f.empty {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		add("missing provenance: %s (C14: every record says what produced it)", strings.Join(missing, ", "))
	}

	for _, name := range slices.Sorted(maps.Keys(r.Metrics)) {
		if u := r.Metrics[name].Unit; !KnownUnit(u) {
			add("metric %s has unit %q, which is not a known unit (known: %s); add a new unit to record.KnownUnits together with the code that emits it",
				name, u, strings.Join(KnownUnits, ", "))
		}
	}
	for _, c := range r.SUT.Containers {
		if a := c.JVMObjectAlignmentBytes; a != 0 && (a < 8 || a > 256 || a&(a-1) != 0) {
			add("container %s: jvm_object_alignment_bytes %d is not an object alignment HotSpot runs with (a power of two from 8 to 256)", c.Name, a)
		}
		if m := c.JVMCompressedOopsMode; m != "" && !slices.Contains(CompressedOopsModes, m) {
			add("container %s: jvm_compressed_oops_mode %q is not one HotSpot names (%s)", c.Name, m, strings.Join(CompressedOopsModes, ", "))
		}
	}
	if e := r.Run.Evidence; e != "" && e != EvidenceMeasured && e != EvidenceExploratory {
		add("run.evidence is %q; it is %q or %q", e, EvidenceMeasured, EvidenceExploratory)
	}
	if s := r.Series; s != nil && (s.File == "" || !sha256Hex.MatchString(s.SHA256)) {
		add("series names file %q with sha256 %q; it needs both, the digest as 64 hex digits", s.File, s.SHA256)
	}
	out = append(out, r.checkHarnessWindow()...)
	if r.Status.CarriesMeasurement() && len(r.Metrics) == 0 {
		add("status %s says the run was measured, but metrics is empty; a run with no measurement is failed", r.Status)
	}
	return out
}

// checkHarnessWindow returns what disagrees between the reference
// harness's rate, its window's length and the window's bounds: a reader
// recomputing one from the others must get the same figure.
func (r *Record) checkHarnessWindow() []string {
	rate, hasRate := r.Metrics[HarnessRowsPerS]
	length, hasLength := r.Metrics[HarnessWindowSeconds]
	h := r.Run.Window.Harness
	switch {
	case h == nil && (hasRate || hasLength):
		return []string{fmt.Sprintf("metrics carry %s or %s but run.window.harness is absent: the reference harness's rate is recorded with its window's bounds", HarnessRowsPerS, HarnessWindowSeconds)}
	case h == nil:
		return nil
	}
	var out []string
	if d := h.ClosedAt.Sub(h.OpenedAt).Seconds(); d != h.DurationS || d <= 0 {
		out = append(out, fmt.Sprintf("run.window.harness runs %v to %v (%v s), but its duration_s is %v", h.OpenedAt, h.ClosedAt, d, h.DurationS))
	}
	if hasLength && length.Value != h.DurationS {
		out = append(out, fmt.Sprintf("metric %s is %v but run.window.harness.duration_s is %v", HarnessWindowSeconds, length.Value, h.DurationS))
	}
	if hasRate && rate.Value != h.RowsPerS() {
		out = append(out, fmt.Sprintf("metric %s is %v but run.window.harness holds %d rows over %v s, %v rows/s", HarnessRowsPerS, rate.Value, h.Rows, h.DurationS, h.RowsPerS()))
	}
	return out
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

func statusList() string {
	s := make([]string, len(Statuses))
	for i, st := range Statuses {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}
