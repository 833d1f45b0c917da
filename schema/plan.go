// Package schema holds the CUE definitions of the fairness contract (the
// .cue files beside this one) and the Go mirror of a resolved plan, which is
// all the executor ever reads: it never re-evaluates policy.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
)

// APIVersion versions the plan document written by `spatec plan -o json`.
const APIVersion = "spatec.dev/plan/v1"

// Roles of an entrant's containers (C3).
const (
	RoleDataPlane    = "data-plane"
	RoleControlPlane = "control-plane"
)

// Plan is one entrant (one variant) resolved against one environment, every
// number concrete. Field names follow the CUE definition #Plan.
type Plan struct {
	Env      Environment `json:"env"`
	Variant  string      `json:"variant"`
	Entrant  Entrant     `json:"entrant"`
	Workload Workload    `json:"workload"`
	Budget   Budget      `json:"budget"`
	// Sources names, by image reference, what spatec builds an image from
	// in the tree beyond what the plan spells out (a Go program's sources,
	// the projects a recipe compiles). A plan reviewed with them binds the
	// program: exec refuses a tree that gives another (C16).
	Sources map[string]string `json:"sources,omitempty"`
	// Footprint, on a point of a footprint study, is the cap the plan was
	// resolved at: its envelope is not the environment's, and its records
	// are never ranked beside the comparison's.
	Footprint *FootprintPoint `json:"footprint,omitempty"`
}

// Environment is a resolved #Environment.
type Environment struct {
	Name        string `json:"name"`
	Class       string `json:"class"`
	Description string `json:"description"`
	Host        Host   `json:"host"`
	// Arch is the host's architecture, which every image spatec builds
	// for the environment is built for.
	Arch       Arch    `json:"arch,omitzero"`
	Partitions int     `json:"partitions"`
	Reserve    Reserve `json:"reserve"`
	// ControlPlane is the largest control-plane container allowed (C2).
	ControlPlane Resources   `json:"controlPlane"`
	Infra        Infra       `json:"infra"`
	Envelope     Resources   `json:"envelope"`
	Runtime      string      `json:"runtime"`
	Kubernetes   *Kubernetes `json:"kubernetes,omitempty"`
	Network      string      `json:"network"`
	// Sizing says which rule made each sized number of the environment.
	Sizing    []Sizing            `json:"sizing,omitempty"`
	Endpoints Endpoints           `json:"endpoints"`
	Workloads map[string]Workload `json:"workloads"`
	Pins      map[string]string   `json:"pins,omitempty"`
	// Closures are the pinned jars of each Maven artifact an image build
	// adds, by its coordinates (#Environment.closures).
	Closures map[string][]ClosureJar `json:"closures,omitempty"`
	// Scenarios are the failure scenarios run on the environment.
	Scenarios map[string]Scenario `json:"scenarios,omitempty"`
}

// Kubernetes is where a run's pods go on a cluster (#Kubernetes).
type Kubernetes struct {
	Namespace     string               `json:"namespace"`
	Kubeconfig    string               `json:"kubeconfig"`
	ExclusiveCPUs bool                 `json:"exclusiveCPUs"`
	ImageLoad     []string             `json:"imageLoad,omitempty"`
	Nodes         map[string]Placement `json:"nodes"`
}

// Placement says which node a pod goes to (#Placement).
type Placement struct {
	Node   string            `json:"node,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Host is what the bench host has.
type Host struct {
	Cores  int   `json:"cores"`
	Memory int64 `json:"memory"`
}

// Resources is a CPU and memory pair.
type Resources struct {
	CPUs   float64 `json:"cpus"`
	Memory int64   `json:"memory"`
}

// Reserve is what an environment holds back for the driver, the sampler
// and the OS (C4).
type Reserve struct {
	CPUs   float64 `json:"cpus"`
	Memory int64   `json:"memory"`
	// HoldsControlPlane says an entrant's control plane runs inside the
	// reserve rather than on top of the envelope. Left out when false, as
	// every environment was before a reserve could hold one, so that
	// their digests stay what they were.
	HoldsControlPlane bool `json:"holdsControlPlane,omitempty"`
}

// Arch is an architecture as Go and Docker's platforms name it: "amd64",
// "arm64".
type Arch string

// The architectures an environment may have (#Environment.arch).
const (
	AMD64 Arch = "amd64"
	ARM64 Arch = "arm64"
)

// Name is the architecture's name; an empty Arch is amd64, what every
// environment ran on before environments said.
func (a Arch) Name() string {
	if a == "" {
		return string(AMD64)
	}
	return string(a)
}

// IsZero tells JSON (omitzero) to leave amd64 out: a plan, an environment
// or a build on amd64 is written as it was before architectures were
// declared, and its digest stays what it was.
func (a Arch) IsZero() bool { return a.Name() == string(AMD64) }

// ArchOf names the architecture a kernel or an engine reports ("x86_64",
// "aarch64", as uname and Docker's Info say it; "amd64", "arm64", as Go and
// Kubernetes do); "" when it is none spatec builds for.
func ArchOf(machine string) Arch {
	switch machine {
	case "x86_64", "amd64":
		return AMD64
	case "aarch64", "arm64":
		return ARM64
	}
	return ""
}

// Infra is the shared infrastructure of an environment (C11).
type Infra struct {
	Broker     Service  `json:"broker"`
	ClickHouse Service  `json:"clickhouse"`
	Registry   *Service `json:"registry,omitempty"`
}

// Service keys name the infrastructure's services, in records and labels.
const (
	ServiceBroker     = "broker"
	ServiceClickHouse = "clickhouse"
	ServiceRegistry   = "registry"
)

// Services lists the infrastructure in the order it starts: the broker,
// ClickHouse, then a registry of its own (which may keep its schemas on
// the broker).
func (i Infra) Services() []Service {
	out := []Service{i.Broker, i.ClickHouse}
	if i.Registry != nil {
		out = append(out, *i.Registry)
	}
	return out
}

// Keyed lists the services with their keys, in the order they start.
func (i Infra) Keyed() []KeyedService {
	out := []KeyedService{{ServiceBroker, i.Broker}, {ServiceClickHouse, i.ClickHouse}}
	if i.Registry != nil {
		out = append(out, KeyedService{ServiceRegistry, *i.Registry})
	}
	return out
}

// KeyedService is a service with its key.
type KeyedService struct {
	Key     string
	Service Service
}

// Service returns the service of a key, and whether the environment has
// it.
func (i Infra) Service(key string) (Service, bool) {
	for _, k := range i.Keyed() {
		if k.Key == key {
			return k.Service, true
		}
	}
	return Service{}, false
}

// Service is one piece of infrastructure.
type Service struct {
	Run            string            `json:"run"`
	Name           string            `json:"name"`
	Image          *Image            `json:"image,omitempty"`
	Build          *Build            `json:"build,omitempty"`
	CPUs           float64           `json:"cpus"`
	Cpuset         string            `json:"cpuset,omitempty"`
	Memory         int64             `json:"memory"`
	MemorySwap     int64             `json:"memorySwap"`
	Args           []string          `json:"args"`
	Environment    map[string]string `json:"environment,omitempty"`
	Files          map[string]string `json:"files,omitempty"`
	NoFile         int64             `json:"nofile,omitempty"`
	Health         *Health           `json:"health,omitempty"`
	Version        *ServiceVersion   `json:"version,omitempty"`
	Publish        map[string]string `json:"publish"`
	Addr           string            `json:"addr"`
	HostAddr       string            `json:"hostAddr,omitempty"`
	SchemaRegistry *SchemaRegistry   `json:"schemaRegistry,omitempty"`
	// HTTPAddr, User and Password are the ClickHouse service's HTTP
	// interface and the credentials its clients use.
	HTTPAddr string `json:"httpAddr,omitempty"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Database string `json:"database,omitempty"`
	// Path is a registry service's API base path.
	Path string `json:"path,omitempty"`
}

// Image is a pinned image reference.
type Image struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest,omitempty"`
}

// Health is a service's own health check, run in its container by the
// engine.
type Health struct {
	Command    []string `json:"command"`
	IntervalMS int64    `json:"interval"`
	TimeoutMS  int64    `json:"timeout"`
	WithinMS   int64    `json:"within"`
}

// ServiceVersion says how a service's version is read inside its image.
type ServiceVersion struct {
	Command []string `json:"command"`
	Match   string   `json:"match"`
}

// SchemaRegistry is the broker's built-in registry.
type SchemaRegistry struct {
	Port     int `json:"port"`
	HostPort int `json:"hostPort"`
}

// Endpoints are the addresses arm containers use.
type Endpoints struct {
	Brokers            string `json:"brokers"`
	ClickHouse         string `json:"clickhouse"`
	ClickHouseHTTP     string `json:"clickhouseHTTP"`
	ClickHouseUser     string `json:"clickhouseUser"`
	ClickHousePassword string `json:"clickhousePassword"`
	Database           string `json:"database"`
	SchemaRegistry     string `json:"schemaRegistry,omitempty"`
}

// Workload is a resolved #Workload: what every arm of a plan drains.
type Workload struct {
	Name           string            `json:"name"`
	Description    string            `json:"description"`
	Format         string            `json:"format"`
	Topic          string            `json:"topic"`
	Messages       int64             `json:"messages"`
	Generator      Generator         `json:"generator"`
	RowsPerMessage int               `json:"rowsPerMessage"`
	Transform      WorkloadTransform `json:"transform"`
	Avro           *Avro             `json:"avro,omitempty"`
	Table          Table             `json:"table"`
	Checksum       map[string]Sum    `json:"checksum"`
	Gates          Gates             `json:"gates"`
	DrainTimeout   int               `json:"drainTimeout"`
	StallLimit     int               `json:"stallLimit"`
	// DatasetVersion names what the data is: derived from the workload's
	// declaration and the generator's bytes (workloads.Version), so two
	// corpora are never ranked together. The compiler sets it.
	DatasetVersion string `json:"datasetVersion"`
}

// Generator is a workload generator's constants (#Generator); which fields
// are set depends on Kind.
type Generator struct {
	Kind           string `json:"kind"`
	RowsPerMessage int    `json:"rowsPerMessage"`
	// sensor-batch
	EventsPerBatch int      `json:"eventsPerBatch,omitempty"`
	Sensors        uint64   `json:"sensors,omitempty"`
	Names          uint64   `json:"names,omitempty"`
	Tags           uint64   `json:"tags,omitempty"`
	Units          []string `json:"units,omitempty"`
	BaseTSMillis   int64    `json:"baseTsMs,omitempty"`
	// json-rows
	Dataset          string `json:"dataset,omitempty"`
	EventsPerMessage int    `json:"eventsPerMessage,omitempty"`
	MessageBytes     int    `json:"messageBytes,omitempty"`
}

// WorkloadTransform is the transform's parameters.
type WorkloadTransform struct {
	DropUnit     string   `json:"dropUnit,omitempty"`
	QualityFloor *float64 `json:"qualityFloor,omitempty"`
}

// Avro is an avro-confluent workload's schema and subject.
type Avro struct {
	Schema  string `json:"schema"`
	Subject string `json:"subject"`
}

// Table is where a workload's rows land (#Table).
type Table struct {
	Name     string   `json:"name"`
	Columns  []string `json:"columns"`
	DDL      string   `json:"ddl"`
	Typed    string   `json:"typed,omitempty"`
	Identity string   `json:"identity"`
	Message  string   `json:"message"`
}

// Sum is one sum of a workload's checksum (#Sum).
type Sum struct {
	SQL  string `json:"sql"`
	Kind string `json:"kind"`
	Doc  string `json:"doc"`
}

// Gates say how a run is judged after its drain.
type Gates struct {
	// QuiesceMS is how long the table must stay unchanged after the arm
	// stopped before the gates read it.
	QuiesceMS int `json:"quiesce"`
}

// Rows is the rows the whole dataset fans out to, before any filter.
func (w Workload) Rows() int64 { return w.Messages * int64(w.RowsPerMessage) }

// Entrant is a resolved #Entrant.
type Entrant struct {
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Blocked     string               `json:"blocked,omitempty"`
	InFlight    int64                `json:"inFlight,omitempty"`
	Supports    []string             `json:"supports"`
	Implements  []string             `json:"implements"`
	Runs        string               `json:"runs"`
	Version     Version              `json:"version"`
	Knobs       map[string]Knob      `json:"knobs"`
	Variants    map[string]Variant   `json:"variants"`
	Containers  map[string]Container `json:"containers"`
	Deviations  []Deviation          `json:"deviations"`
	// Sizing says which rule made each sized number of the arm.
	Sizing      []Sizing             `json:"sizing,omitempty"`
	Validate    []Validator          `json:"validate,omitempty"`
	Footprints  map[string]Footprint `json:"footprints,omitempty"`
	SinkObjects *SinkObjects         `json:"sinkObjects,omitempty"`
	// Restart is the data plane's restart policy in a failure scenario's
	// runs; Guarantee the delivery guarantee it is held to there.
	Restart   string     `json:"restart"`
	Guarantee *Guarantee `json:"guarantee,omitempty"`
}

// Guarantee is an arm's delivery guarantee as its documentation or code
// states it (#Entrant.guarantee).
type Guarantee struct {
	Kind   string `json:"kind"`
	Source string `json:"source"`
}

// Delivery guarantees.
const (
	AtLeastOnce = "at-least-once"
	ExactlyOnce = "exactly-once"
	NoGuarantee = "none"
)

// Scenario is a failure scenario (#Scenario): a fault spatec injects
// mid-drain into one component.
type Scenario struct {
	Doc       string  `json:"doc,omitempty"`
	Component string  `json:"component"`
	Action    string  `json:"action"`
	PauseS    int     `json:"pause"`
	At        float64 `json:"at"`
	RecoveryS int     `json:"recovery"`
}

// Scenario components and actions.
const (
	ComponentDataPlane = "data-plane"
	ActionRestart      = "restart"
	ActionKill         = "kill"
	ActionPause        = "pause"
	ActionPartition    = "partition"
	ActionDelete       = "delete"
)

// Show says what the scenario does, in a line.
func (s Scenario) Show() string {
	what := s.Action + " the " + s.Component
	if s.Component == ComponentDataPlane {
		what = s.Action + " the arm's data plane"
	}
	switch {
	case s.Action == ActionPartition:
		what = fmt.Sprintf("cut the arm off from the %s for %d s", s.Component, s.PauseS)
	case s.Action == ActionPause:
		what += fmt.Sprintf(" for %d s", s.PauseS)
	case s.Action == ActionKill && s.Component != ComponentDataPlane:
		what += fmt.Sprintf(", started again after %d s", s.PauseS)
	case s.Action == ActionKill:
		what += ", started again by its restart policy"
	case s.Action == ActionDelete:
		what = "delete the arm's pod, made again by its ReplicaSet"
	}
	return fmt.Sprintf("%s once %.0f%% of the rows have landed; recovery bound %d s", what, s.At*100, s.RecoveryS)
}

// SinkObjects are an arm's own objects on the environment's ClickHouse
// (#SinkObjects): the statements that make them and that drop them.
type SinkObjects struct {
	Create []string `json:"create"`
	Drop   []string `json:"drop"`
}

// Validator is a system's own check of its configuration (#Validator).
type Validator struct {
	Container string   `json:"container"`
	Command   []string `json:"command"`
}

// Version says how the entrant's version is read inside its image (C16).
type Version struct {
	Pin       string   `json:"pin"`
	Container string   `json:"container"`
	Command   []string `json:"command"`
	Match     string   `json:"match"`
}

// Knob is a typed tunable.
type Knob struct {
	Type        string `json:"type"`
	Value       any    `json:"value"`
	Parallelism bool   `json:"parallelism"`
	SetBy       any    `json:"setBy,omitempty"`
	Doc         string `json:"doc"`
}

// Variant is a named set of knob values.
type Variant struct {
	Default bool           `json:"default"`
	Set     map[string]any `json:"set"`
	Doc     string         `json:"doc,omitempty"`
	Study   string         `json:"study,omitempty"`
	Runs    string         `json:"runs,omitempty"`
}

// Footprint is a minimum-footprint study (#Footprint): one cap of the
// data plane stepped down from the envelope until the arm degrades.
type Footprint struct {
	Doc        string  `json:"doc,omitempty"`
	Axis       string  `json:"axis"`
	Floor      float64 `json:"floor"`
	Step       float64 `json:"step"`
	Resolution float64 `json:"resolution"`
	Fraction   float64 `json:"fraction"`
	Reps       int     `json:"reps"`
	Variant    string  `json:"variant,omitempty"`
}

// MiB is a mebibyte, in bytes.
const MiB = 1 << 20

// Footprint axes.
const (
	AxisMemory = "memory"
	AxisCPUs   = "cpus"
)

// FootprintPoint says that a plan is a point of a footprint study: the
// environment's envelope was set to Cap on the study's axis, and Full is
// what the environment gives every arm.
type FootprintPoint struct {
	Study    string  `json:"study"`
	Axis     string  `json:"axis"`
	Cap      float64 `json:"cap"`
	Full     float64 `json:"full"`
	Fraction float64 `json:"fraction"`
}

// Show gives the point's cap in its unit: memory as the CUE files write
// it, CPUs to the quota's grain.
func (f *FootprintPoint) Show() string {
	if f.Axis == AxisMemory {
		return FormatBytes(int64(f.Cap))
	}
	return fmt.Sprintf("%.2f CPUs", f.Cap)
}

// Sizing is one number a rule made (#Sizing).
type Sizing struct {
	What  string `json:"what"`
	Value string `json:"value"`
	Rule  string `json:"rule"`
}

// Deviation discloses a departure from the contract's plain reading.
type Deviation struct {
	ID      string   `json:"id"`
	Affects []string `json:"affects"`
	Why     string   `json:"why"`
}

// Container is one resolved container of an entrant.
type Container struct {
	Role        string            `json:"role"`
	Image       string            `json:"image"`
	Build       *Build            `json:"build,omitempty"`
	Runtime     string            `json:"runtime"`
	CPUs        float64           `json:"cpus"`
	Cpuset      string            `json:"cpuset,omitempty"`
	Memory      int64             `json:"memory"`
	MemorySwap  int64             `json:"memorySwap"`
	Entrypoint  []string          `json:"entrypoint,omitempty"`
	Args        []string          `json:"args"`
	Environment map[string]string `json:"environment"`
	Files       map[string]string `json:"files"`
	// Volumes are named volumes by mount path, shared by the arm's
	// containers that name the same one.
	Volumes map[string]string `json:"volumes,omitempty"`
	JVM     *JVM              `json:"jvm,omitempty"`
}

// Build says how the executor builds an image itself: exactly one of its
// fields is set.
type Build struct {
	// Program is a Go package of this module, built into a FROM scratch
	// image.
	Program string `json:"program,omitempty"`
	// Debian is a recipe of Debian packages.
	Debian *Debian `json:"debian,omitempty"`
	// Layered is a base image with downloads and files added.
	Layered *Layered `json:"layered,omitempty"`
}

// Layered is an image made of a base and what is added to it (#Layered).
type Layered struct {
	From       string            `json:"from"`
	Downloads  []Download        `json:"downloads"`
	Maven      []MavenArtifact   `json:"maven,omitempty"`
	Files      map[string]string `json:"files"`
	User       string            `json:"user,omitempty"`
	Entrypoint []string          `json:"entrypoint,omitempty"`
}

// Download is an artefact a layered image adds (#Download).
type Download struct {
	URL string `json:"url"`
	// SHA256 is "" when the declaration leaves it to the environment's
	// pins.
	SHA256 string  `json:"sha256,omitempty"`
	To     string  `json:"to"`
	Unzip  *string `json:"unzip,omitempty"`
	Untar  *string `json:"untar,omitempty"`
}

// MavenArtifact is a Maven artifact a layered image adds with its runtime
// closure (#MavenArtifact).
type MavenArtifact struct {
	Repositories []string `json:"repositories"`
	Artifact     string   `json:"artifact"`
	To           string   `json:"to"`
}

// ClosureJar is one pinned jar of a Maven closure (#ClosureJar).
type ClosureJar struct {
	URL    string `json:"url"`
	SHA256 string `json:"sha256"`
}

// Debian is a recipe for an image made of Debian packages (#Debian).
type Debian struct {
	Suite       string            `json:"suite"`
	Sources     []string          `json:"sources"`
	Packages    []string          `json:"packages"`
	Downloads   []Download        `json:"downloads,omitempty"`
	Compile     []Compile         `json:"compile,omitempty"`
	Files       map[string]string `json:"files"`
	User        string            `json:"user"`
	Entrypoint  []string          `json:"entrypoint"`
	Run         []string          `json:"run,omitempty"`
	Environment map[string]string `json:"environment"`
	Epoch       int64             `json:"epoch"`
}

// Compile is a program of this tree an image's build compiles (#Compile).
type Compile struct {
	Cargo  *Cargo   `json:"cargo,omitempty"`
	Maven  *Maven   `json:"maven,omitempty"`
	Inputs []string `json:"inputs,omitempty"`
	To     string   `json:"to"`
}

// Cargo is a Rust crate of the tree and the binary taken from it.
type Cargo struct {
	Crate string `json:"crate"`
	Bin   string `json:"bin"`
}

// Maven is a Maven project of the tree and the jar taken from it.
type Maven struct {
	Project string `json:"project"`
	Jar     string `json:"jar"`
}

// JVM is a JVM container's heap declaration (C9).
type JVM struct {
	Heap               int64  `json:"heap"`
	Floor              int64  `json:"floor"`
	NonHeap            int64  `json:"nonHeap"`
	ObjectAlignment    int    `json:"objectAlignment"`
	HeapBaseMinAddress int64  `json:"heapBaseMinAddress"`
	Ceiling            int64  `json:"ceiling"`
	GC                 string `json:"gc"`
	LiveSet            int64  `json:"liveSet,omitempty"`
	GCLog              string `json:"gcLog"`
	// FlagsLog are the options under which the JVM writes its final flags
	// to a file (#JVM.flagsLog); they are among JVMOptions.
	FlagsLog    []string `json:"flagsLog"`
	JVMOptions  []string `json:"jvmOptions"`
	Options     []string `json:"options"`
	OptionsVia  string   `json:"optionsVia"`
	OptionsJoin string   `json:"optionsJoin"`
	Flink       string   `json:"flink,omitempty"`
	// ProcessSize, Config and ConfigFile are a Flink process's: its whole
	// memory, which Flink divides into Heap and NonHeap, and the
	// configuration entries its config.yaml holds for that division and
	// its JVM options.
	ProcessSize int64             `json:"processSize,omitempty"`
	Config      map[string]string `json:"config,omitempty"`
	ConfigFile  string            `json:"configFile,omitempty"`
}

// CompressedOopsMode is the compressed-oops mode the declared heap implies,
// in HotSpot's words (its gc+init log says "Compressed Oops: Enabled
// (Zero based)"). HotSpot places the heap from HeapBaseMinAddress up:
// unscaled ("32-bit") while it ends within 4 GiB, "Zero based" while it
// ends within the encoding's reach (32 GiB per 8 bytes of object alignment),
// which is what Ceiling holds the heap to. ZGC uses none ("Disabled"). It is
// "" where the plan does not say: no object alignment declared, or a heap
// above the ceiling, which C9 refuses and where HotSpot takes a base, or no
// compressed oops, as it finds room.
func (j *JVM) CompressedOopsMode() string {
	switch {
	case j == nil || j.ObjectAlignment == 0:
		return ""
	case j.GC == "ZGC":
		return "Disabled"
	case j.HeapBaseMinAddress+j.Heap <= 4<<30:
		return "32-bit"
	case j.Heap <= j.Ceiling:
		return "Zero based"
	}
	return ""
}

// Budget is the C4 host arithmetic.
type Budget struct {
	CPUs   BudgetLine `json:"cpus"`
	Memory BudgetLine `json:"memory"`
}

// BudgetLine is one line of the host arithmetic.
type BudgetLine struct {
	Infra        float64 `json:"infra"`
	Envelope     float64 `json:"envelope"`
	ControlPlane float64 `json:"controlPlane"`
	Reserve      float64 `json:"reserve"`
	// ControlPlaneInReserve says the control plane runs inside the
	// reserve, which is then counted once, as the larger of the two.
	ControlPlaneInReserve bool    `json:"controlPlaneInReserve,omitempty"`
	Host                  float64 `json:"host"`
	Used                  float64 `json:"used"`
	Left                  float64 `json:"left"`
}

// Table is the plan's table, qualified with the environment's database.
func (p *Plan) Table() string { return p.Env.Endpoints.Database + "." + p.Workload.Table.Name }

// ContainerNames returns the entrant's container names, control planes first
// (they start first), then by name.
func (p *Plan) ContainerNames() []string {
	names := make([]string, 0, len(p.Entrant.Containers))
	for n := range p.Entrant.Containers {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ci, cj := p.Entrant.Containers[names[i]], p.Entrant.Containers[names[j]]
		if (ci.Role == RoleControlPlane) != (cj.Role == RoleControlPlane) {
			return ci.Role == RoleControlPlane
		}
		return names[i] < names[j]
	})
	return names
}

// ParallelismKnob returns the knob marked as consumer parallelism.
func (p *Plan) ParallelismKnob() (string, Knob, bool) {
	for name, k := range p.Entrant.Knobs {
		if k.Parallelism {
			return name, k, true
		}
	}
	return "", Knob{}, false
}

// KnobValues returns the knob values by name (the record's "variant").
func (p *Plan) KnobValues() map[string]any {
	out := make(map[string]any, len(p.Entrant.Knobs))
	for n, k := range p.Entrant.Knobs {
		out[n] = k.Value
	}
	return out
}

// NanoCPUs converts a CPU quota to the engine's nano-CPU unit, exactly for
// the two decimal places C15 allows.
func NanoCPUs(cpus float64) int64 { return int64(math.Round(cpus*100)) * 10_000_000 }

// Digest is the sha256 of the plan's canonical JSON: encoding/json writes
// struct fields in declaration order and map keys sorted, so equal plans
// give equal bytes.
func (p *Plan) Digest() string { return digestOf(p) }

// EnvDigest is the sha256 of the environment's canonical JSON.
func (p *Plan) EnvDigest() string { return digestOf(p.Env) }

// InfraDigest is the sha256 of the infrastructure caps and the partition
// count: a ceiling measured under another value is stale (C12).
func (p *Plan) InfraDigest() string {
	return digestOf(struct {
		Infra      Infra `json:"infra"`
		Partitions int   `json:"partitions"`
	}{p.Env.Infra, p.Env.Partitions})
}

func digestOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Plan types hold only JSON-safe values; a failure here is a bug.
		panic(fmt.Sprintf("marshalling plan for its digest: %v", err))
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Document is the versioned plan file: `spatec plan -o json` writes it and
// `spatec exec plan.json` runs it, refusing one whose digest does not match
// its content.
type Document struct {
	APIVersion string `json:"apiVersion"`
	Digest     string `json:"digest"`
	Plan       Plan   `json:"plan"`
}

// NewDocument wraps a plan with its version and digest.
func NewDocument(p Plan) Document {
	return Document{APIVersion: APIVersion, Digest: p.Digest(), Plan: p}
}

// Check verifies a document read back from disk: its version is known and
// its digest matches its content.
func (d *Document) Check() error {
	if d.APIVersion != APIVersion {
		return fmt.Errorf("plan document apiVersion is %q; this spatec reads %q", d.APIVersion, APIVersion)
	}
	if got := d.Plan.Digest(); got != d.Digest {
		return fmt.Errorf("plan digest does not match its content: the document says %s, the content hashes to %s; the plan was edited after review, so plan it again with `spatec plan -o json`", d.Digest, got)
	}
	return nil
}

// StartEnvironment is the environment a container starts with, on any
// runtime: its declared one, and for a JVM the plan's heap options
// (#JVM.options) in the variable its launcher reads them from
// (#JVM.optionsVia), after what the entrant put there, and the GC-log
// option appended to JAVA_TOOL_OPTIONS, which every JVM reads at start-up.
func (c Container) StartEnvironment() map[string]string {
	if c.JVM == nil {
		return c.Environment
	}
	env := maps.Clone(c.Environment)
	if env == nil {
		env = map[string]string{}
	}
	add := func(k, v, sep string) {
		if env[k] != "" {
			v = strings.TrimRight(env[k], " \n") + sep + v
		}
		env[k] = v
	}
	if len(c.JVM.Options) > 0 {
		sep := c.JVM.OptionsJoin
		if sep == "" {
			sep = " "
		}
		add(c.JVM.OptionsVia, strings.Join(c.JVM.Options, sep), sep)
	}
	// A Flink process reads its JVM options, the GC log's among them,
	// from its configuration file.
	if c.JVM.GCLog != "" && c.JVM.Flink == "" {
		add("JAVA_TOOL_OPTIONS", c.JVM.GCLog, " ")
	}
	return env
}
