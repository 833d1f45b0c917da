package compiler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"spatec.dev/spatec/schema"
)

// mustFail is one broken input: a real file of the tree with one edit, the
// plan it breaks, and the problem that must be reported.
type mustFail struct {
	name          string
	file          string // the file edited
	old, new      string // the edit; new must be unique in the result
	old2, new2    string // a second edit of the same file, when one is not enough
	env, entrant  string // env "": a problem of the tree, not of one plan
	variant       string // "" is the entrant's default
	rule          string
	message       string // a substring of the problem's message
	line          string // text on the line the problem must point at ("" = the line of new)
	lineInFile    string // file the position is in ("" = file)
	anyPosInFiles bool   // the position may be any line of lineInFile
	// fix is the problem's hint applied, {old, new} in the edited file:
	// the plan must then resolve without a problem.
	fix [2]string
	// notIn is said by no problem: a consequence reported before, or
	// instead of, its cause.
	notIn string
	// cueEdit is a further edit {file, old, new} the official tool needs
	// to see the same input: the entrant's own plans.cue importing an
	// environment it now supports.
	cueEdit [3]string
	// alone says the problem is the only one `spatec vet` prints for the
	// whole tree: no echo of it, no consequence of it elsewhere.
	alone bool
	// spatecOnly says why the official tool cannot see this problem, for
	// the few that only `spatec vet` finds (TestCueVetAgrees skips them).
	spatecOnly string
}

const (
	flinkFile   = "entrants/flink/flink.cue"
	connectFile = "entrants/kafka-connect/connect.cue"
	vectorFile  = "entrants/vector/vector.cue"
	spateFile   = "entrants/spate/spate.cue"
	benchFile   = "envs/bench-96c/env.cue"
	retFile     = "envs/retired-32c/env.cue"
	c8gFile     = "envs/c8g-8xl-ec2-docker/env.cue"

	localFile           = "envs/local/env.cue"
	k8sFile             = "envs/k8s-single/env.cue"
	localContainersFile = "envs/local-containers/env.cue"
	referenceFile       = "entrants/reference/reference.cue"
)

var mustFails = []mustFail{
	// C1: the envelope is derived, never written by hand, and must be positive.
	{name: "C1 envelope written by hand", file: benchFile,
		old: "envelope: memory: 96 * GiB", new: "envelope: {memory: 96 * GiB, cpus: 30}",
		env: "bench-96c", entrant: "vector", rule: "C1", message: "conflicting values"},
	{name: "C1 no cores left", file: benchFile,
		old: "cores:  96", new: "cores:  30",
		env: "bench-96c", entrant: "vector", rule: "C1",
		message: "bench-96c: 30 host cores − 35 for infrastructure − 0 reserved leave -5 for the envelope",
		line:    "envelope: memory: 96 * GiB"},
	// C2: a control plane needs its deviation.
	{name: "C2 control plane without deviation", file: flinkFile,
		old: `affects: ["envelope"]`, new: `affects: ["latency"]`,
		env: "bench-96c", entrant: "flink", rule: "C2",
		message: "flink:default on bench-96c: control-plane container jm (1 CPUs) is allocated on top of the envelope, which must be disclosed",
		line:    `role:    "control-plane"`},
	{name: "C2 control plane larger than the environment allows", file: flinkFile,
		old: "cpus:    env.controlPlane.cpus", new: "cpus:    28",
		env: "bench-96c", entrant: "flink", rule: "C2",
		message: "flink:default on bench-96c: control-plane container jm has 28 CPUs on top of the envelope; bench-96c allows a control plane at most 1 (env.controlPlane.cpus): what needs more is data plane, inside the envelope; write cpus: env.controlPlane.cpus",
		fix:     [2]string{"cpus:    28", "cpus:    env.controlPlane.cpus"}},
	// C3: roles, exactly one data plane, sized to the envelope.
	{name: "C3 misspelt role", file: flinkFile,
		old: `role:    "control-plane"`, new: `role:    "control_plane"`,
		env: "bench-96c", entrant: "flink", rule: "C3",
		message: `flink:default on bench-96c: container jm has role "control_plane"; the only roles are "data-plane" and "control-plane"`},
	{name: "C3 missing data plane", file: vectorFile,
		old: `role:   "data-plane"`, new: `role:   "control-plane"`,
		env: "bench-96c", entrant: "vector", rule: "C3",
		message: "vector:default on bench-96c: needs exactly one data-plane container, got 0", line: "containers: vector: {"},
	{name: "C3 second data plane", file: flinkFile,
		old: `role:    "control-plane"`, new: `role:    "data-plane"`,
		env: "bench-96c", entrant: "flink", rule: "C3",
		message: "flink:default on bench-96c: needs exactly one data-plane container, got 2 (jm, tm)", line: "containers: {"},
	{name: "C3 data plane is not the envelope (cpus)", file: flinkFile,
		old: "cpus:    envelope.cpus", new: "cpus:    30",
		env: "bench-96c", entrant: "flink", rule: "C3",
		message: "flink:default on bench-96c: data-plane container tm has 30 CPUs; the envelope of bench-96c is 32"},
	{name: "C3 data plane is not the envelope (memory)", file: flinkFile,
		old: "memory:  envelope.memory", new: "memory:  64 * schema.GiB",
		env: "bench-96c", entrant: "flink", rule: "C3",
		message: "flink:default on bench-96c: data-plane container tm has 64 GiB of memory; the envelope of bench-96c is 96 GiB"},
	// C4: the host budget.
	{name: "C4 host budget overflow", file: flinkFile,
		old: `supports: ["local-containers", "bench-96c", "c8g-8xl-ec2-docker"]`, new: `supports: ["local-containers", "bench-96c", "c8g-8xl-ec2-docker", "retired-32c"]`,
		env: "retired-32c", entrant: "flink", rule: "C4",
		message: "flink:default on retired-32c: infra 19 + envelope 6 + control plane 1 + reserve 7 = 33 exceeds the host's 32 (cpus)",
		cueEdit: [3]string{"entrants/flink/plans.cue", `"bench-96c":          bench96c.env`, `"bench-96c":          bench96c.env
		"retired-32c": retired32c.env`},
		// What the entrant adds on top tipped it over.
		line: "cpus:    env.controlPlane.cpus"},
	{name: "C4 memory in GiB", file: flinkFile,
		old: "memory:  env.controlPlane.memory", new: "memory:  200 * schema.GiB",
		env: "bench-96c", entrant: "flink", rule: "C4",
		message: "flink:default on bench-96c: infra 40 GiB + envelope 96 GiB + control plane 200 GiB + reserve 0 GiB = 336 GiB exceeds the host's 192 GiB (memory)"},
	// A reserve that holds the control plane holds all of it, and keeps
	// the driver's floor beside it.
	{name: "C4 control plane larger than the reserve it runs in", file: c8gFile,
		old: "controlPlane: {\n\t\tcpus:   1\n", new: "controlPlane: {\n\t\tcpus:   8\n",
		env: "c8g-8xl-ec2-docker", entrant: "flink", rule: "C4", line: "cpus:   8",
		message: "c8g-8xl-ec2-docker: controlPlane.cpus is 8, but the reserve, which holds the control plane, has room for 6.95 (keeping the 0.05 CPU spatec's driver and sampler need, #DriverFloor); lower controlPlane.cpus to at most 6.95",
		notIn:   "exceeds the host's", fix: [2]string{"cpus:   8", "cpus:   6.95"}},
	{name: "C4 control plane's memory larger than the reserve it runs in", file: c8gFile,
		old: "memory: 2 * GiB", new: "memory: 10 * GiB",
		env: "c8g-8xl-ec2-docker", entrant: "flink", rule: "C4",
		message: "c8g-8xl-ec2-docker: controlPlane.memory is 10 GiB, but the reserve, which holds the control plane, has room for 8 GiB; lower controlPlane.memory to at most 8 GiB",
		fix:     [2]string{"memory: 10 * GiB", "memory: 8 * GiB"}},
	{name: "C4 a reserve that keeps less than the driver's floor beside its control plane", file: c8gFile,
		old: "controlPlane: {\n\t\tcpus:   1\n", new: "controlPlane: {\n\t\tcpus:   7\n",
		env: "c8g-8xl-ec2-docker", entrant: "flink", rule: "C4", line: "cpus:   7",
		message: "c8g-8xl-ec2-docker: controlPlane.cpus is 7, but the reserve, which holds the control plane, has room for 6.95 (keeping the 0.05 CPU spatec's driver and sampler need, #DriverFloor); lower controlPlane.cpus to at most 6.95",
		fix:     [2]string{"cpus:   7", "cpus:   6.95"}},
	{name: "C4 no partition count leaves room for a control plane", file: benchFile,
		old: "partitions: 32", new: "partitions: 32\n\treserve: cpus: 60",
		env: "bench-96c", entrant: "flink", rule: "C4",
		message: "and the environment leaves nothing beside its envelope for a control plane; no partition count leaves room for it: give the infrastructure fewer CPUs in bench-96c, or the host more",
		notIn:   "at most -", lineInFile: flinkFile, line: "cpus:    env.controlPlane.cpus"},
	{name: "C1 with a reserve", file: retFile,
		old: "cores:  32", new: "cores:  24",
		env: "retired-32c", entrant: "vector", rule: "C1",
		message: "retired-32c: 24 host cores − 19 for infrastructure − 7 reserved leave -2 for the envelope",
		line:    "envelope: memory: 24 * GiB"},
	// cpusets parse, lie within the host, hold the container's CPUs, and
	// do not overlap.
	{name: "C15 cpuset that does not parse", file: benchFile,
		old: "nofile:   262144", new: "nofile:   262144\n\t\t\tcpuset: \"0-3x\"",
		env: "bench-96c", entrant: "vector", rule: "C15", alone: true,
		message: `bench-96c: service clickhouse has cpuset "0-3x", which is not a CPU list`, line: `cpuset: "0-3x"`},
	// The engine runs the harness's image by digest on c8g: the digest is
	// the sink's tag's, so a sink on another tag is refused.
	{name: "C15 engine digest beside another sink version", file: c8gFile,
		old: `image: ref: "clickhouse/clickhouse-server:26.3"`, new: `image: ref: "clickhouse/clickhouse-server:26.2"`,
		env: "c8g-8xl-ec2-docker", entrant: "clickhouse-kafka-engine", rule: "C15",
		message:    "the engine runs clickhouse/clickhouse-server:26.3@sha256:85c434814ac8905e5648027ce926f74ab067edd6aadbccb6c0c165cd3571ea49, the harness's image, but the sink runs clickhouse/clickhouse-server:26.2",
		lineInFile: "entrants/clickhouse-kafka-engine/chkafka.cue", line: `error("C15: clickhouse-kafka-engine: on`},
	{name: "C4 cpuset beyond the host", file: vectorFile,
		old: `image:  "timberio/vector:0.57.0-debian"`, new: `image:  "timberio/vector:0.57.0-debian"` + "\n\t\tcpuset: \"90-121\"",
		env: "bench-96c", entrant: "vector", rule: "C4",
		message: "container vector has cpuset 90-121, but bench-96c has CPUs 0-95", line: `cpuset: "90-121"`},
	{name: "C3 cpuset narrower than the data plane", file: vectorFile,
		old: `image:  "timberio/vector:0.57.0-debian"`, new: `image:  "timberio/vector:0.57.0-debian"` + "\n\t\tcpuset: \"0-3\"",
		env: "bench-96c", entrant: "vector", rule: "C3",
		message: "container vector has 32 CPUs but its cpuset 0-3 holds 4, so it could use at most 4", line: `cpuset: "0-3"`},
	{name: "C4 cpusets that overlap", file: flinkFile,
		old: "cpus:    env.controlPlane.cpus", new: "cpus:    env.controlPlane.cpus\n\t\t\tcpuset: \"30-31\"",
		old2: "cpus:    envelope.cpus", new2: "cpus:    envelope.cpus\n\t\t\tcpuset: \"0-31\"",
		env: "bench-96c", entrant: "flink", rule: "C4",
		message: "container jm (cpuset 30-31) and container tm (cpuset 0-31) share CPUs 30,31; cpusets of one plan do not overlap", line: `cpuset: "0-31"`},
	// C5: swap equals memory, arm and infra.
	{name: "C5 arm swap", file: flinkFile,
		old: "memory:  env.controlPlane.memory", new: "memory:  env.controlPlane.memory, memorySwap: 4 * schema.GiB",
		env: "bench-96c", entrant: "flink", rule: "C5",
		message: "flink:default on bench-96c: container jm has memorySwap 4 GiB but memory 2 GiB; swap is disabled"},
	{name: "C5 infra swap", file: benchFile,
		old: "memory: 32 * GiB", new: "memory: 32 * GiB, memorySwap: 64 * GiB",
		env: "bench-96c", entrant: "vector", rule: "C5",
		message: "bench-96c: clickhouse has memorySwap 64 GiB but memory 32 GiB"},
	// C9: JVM heap bounds.
	{name: "C9 heap below floor", file: flinkFile,
		old: "processSize: 21504 * MiB", new: "processSize: 8192 * MiB",
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: container tm heap 6150 MiB is below the entrant's floor of 17946 MiB",
		fix:     [2]string{"processSize: 8192 * MiB", "processSize: 21504 * MiB"}},
	{name: "C9 heap above ceiling", file: flinkFile,
		old: "processSize: 21504 * MiB", new: "processSize: 40 * 1024 * MiB",
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: container tm heap 35456 MiB is above the compressed-oops ceiling of 30 GiB"},
	{name: "C9 heap and non-heap exceed the container", file: flinkFile,
		old: "processSize: memory - 128*MiB", new: "processSize: memory + 512*MiB",
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: container jm heap 1920 MiB + non-heap 640 MiB = 2560 MiB does not fit its memory of 2 GiB; lower jvm.processSize (Flink's whole process) to at most the container's memory",
		fix:     [2]string{"processSize: memory + 512*MiB", "processSize: memory - 128*MiB"}},
	{name: "C9 JVM without heap", file: spateFile,
		old: `role:  "data-plane"`, new: `role:  "data-plane", runtime: "jvm"`,
		env: "bench-96c", entrant: "spate", rule: "C9",
		message: "spate:native on bench-96c: JVM container arm declares no heap"},
	{name: "C9 hand-written heap option disagrees", file: connectFile,
		old: `entrypoint: ["/opt/kafka/bin/connect-standalone.sh",`,
		new: `environment: JAVA_TOOL_OPTIONS: "-XX:+UseG1GC -Xmx2g"` + "\n\t\tentrypoint: [\"/opt/kafka/bin/connect-standalone.sh\",",
		env: "bench-96c", entrant: "kafka-connect", rule: "C9",
		message: "kafka-connect:default on bench-96c: container worker sets -Xmx2g in its environment JAVA_TOOL_OPTIONS; its declared heap is 20 GiB: remove the option, spatec hands the declared heap over as -Xms20480m -Xmx20480m in KAFKA_HEAP_OPTS",
		line:    `environment: JAVA_TOOL_OPTIONS: "-XX:+UseG1GC -Xmx2g"`},
	{name: "C9 heap in HotSpot's own spelling", file: connectFile,
		old: `entrypoint: ["/opt/kafka/bin/connect-standalone.sh",`,
		new: `environment: JDK_JAVA_OPTIONS: "-XX:MaxHeapSize=4g"` + "\n\t\tentrypoint: [\"/opt/kafka/bin/connect-standalone.sh\",",
		env: "bench-96c", entrant: "kafka-connect", rule: "C9",
		message: "kafka-connect:default on bench-96c: container worker sets -XX:MaxHeapSize=4g in its environment JDK_JAVA_OPTIONS; its declared heap is 20 GiB: remove the option, spatec hands the declared heap over as -Xms20480m -Xmx20480m in KAFKA_HEAP_OPTS",
		line:    `environment: JDK_JAVA_OPTIONS: "-XX:MaxHeapSize=4g"`},
	{name: "C9 heap as a fraction of the container", file: connectFile,
		old: `entrypoint: ["/opt/kafka/bin/connect-standalone.sh",`,
		new: `environment: KAFKA_OPTS: "-XX:MaxRAMPercentage=75.0"` + "\n\t\tentrypoint: [\"/opt/kafka/bin/connect-standalone.sh\",",
		env: "bench-96c", entrant: "kafka-connect", rule: "C9",
		message: "kafka-connect:default on bench-96c: container worker sets -XX:MaxRAMPercentage=75.0 in its environment KAFKA_OPTS, a heap sized from the container's memory; its declared heap is 20 GiB: remove the option, spatec hands the declared heap over as -Xms20480m -Xmx20480m in KAFKA_HEAP_OPTS",
		line:    `environment: KAFKA_OPTS: "-XX:MaxRAMPercentage=75.0"`},
	{name: "C9 heap in the entrypoint", file: connectFile,
		old: `entrypoint: ["/opt/kafka/bin/connect-standalone.sh",`,
		new: `entrypoint: ["java", "-Xmx2g", "/opt/kafka/bin/connect-standalone.sh",`,
		env: "bench-96c", entrant: "kafka-connect", rule: "C9",
		message: "kafka-connect:default on bench-96c: container worker sets -Xmx2g in its entrypoint; its declared heap is 20 GiB: remove the option, spatec hands the declared heap over as -Xms20480m -Xmx20480m in KAFKA_HEAP_OPTS"},
	{name: "C9 hand-written Flink memory option", file: flinkFile,
		old: `"jobmanager.rpc.address":                 "jm"`, new: `"jobmanager.rpc.address":                 "jm"` + "\n\t\t\"taskmanager.memory.process.size\": \"21504m\"",
		env: "bench-96c", entrant: "flink", rule: "C9",
		line:    `"taskmanager.memory.process.size": "21504m"`,
		message: "flink:default on bench-96c: taskmanager.memory.process.size in Flink 2.2.1's configuration sets what the contract owns: the container's jvm block: spatec writes every memory option Flink would derive from jvm.processSize (schema #FlinkMemory); remove the key",
		fix:     [2]string{"\n\t\t\"taskmanager.memory.process.size\": \"21504m\"", ""}},
	// Flink 2 reads a nested key as its flat spelling.
	{name: "C9 Flink memory option written nested", file: flinkFile,
		old: `"jobmanager.rpc.address":                 "jm"`, new: `"jobmanager.rpc.address":                 "jm"` + "\n\t\ttaskmanager: memory: process: size: \"4096m\"",
		env: "bench-96c", entrant: "flink", rule: "C15", line: `taskmanager: memory: process: size: "4096m"`,
		message: `write the keys under taskmanager flat, as the registry names them ("taskmanager.…")`,
		fix:     [2]string{"\n\t\ttaskmanager: memory: process: size: \"4096m\"", ""}},
	{name: "C9 Flink memory option written flat and nested", file: flinkFile,
		old: `"jobmanager.rpc.address":                 "jm"`, new: `"jobmanager.rpc.address":                 "jm"` + "\n\t\ttaskmanager: memory: \"jvm-metaspace\": size: \"512m\"",
		env: "bench-96c", entrant: "flink", rule: "C15", line: `taskmanager: memory: "jvm-metaspace": size: "512m"`,
		message: `write the keys under taskmanager flat, as the registry names them ("taskmanager.…")`},
	// Flink's launcher puts env.java.opts after the heap it computes.
	{name: "C9 later heap in Flink's java options", file: flinkFile,
		old: `"env.java.opts.all":                                 _javaOptsAll`, new: `"env.java.opts.all":                                 _javaOptsAll + " -Xmx40g"`,
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: these JVM options size the heap or set its compressed-oops arithmetic, which the container's jvm block owns",
		fix:     [2]string{` + " -Xmx40g"`, ""}},
	{name: "C9 object alignment in Flink's java options", file: flinkFile,
		old: `"env.java.opts.all":                                 _javaOptsAll`, new: `"env.java.opts.all":                                 _javaOptsAll + " -XX:ObjectAlignmentInBytes=16"`,
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: these JVM options size the heap or set its compressed-oops arithmetic, which the container's jvm block owns"},
	{name: "C9 Flink memory option of another value", file: flinkFile,
		old: "for k, v in containers.tm.jvm.config {(k): v}", new: `"taskmanager.memory.task.heap.size": "2048m"`,
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: container tm's /opt/flink/conf/config.yaml sets taskmanager.memory.task.heap.size: 2048m; its process of 21 GiB and JVM options make it taskmanager.memory.task.heap.size: 17818m: write the file from the container's jvm.config",
		line:    `"/opt/flink/conf/config.yaml": yaml.Marshal(_config)`},
	{name: "C9 Flink without its config.yaml", file: flinkFile,
		old: "entrypoint: [\"/opt/flink/bin/taskmanager.sh\", \"start-foreground\"]\n\t\t\tfiles: conf", new: "entrypoint: [\"/opt/flink/bin/taskmanager.sh\", \"start-foreground\"]",
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: container tm runs Flink's taskmanager, which reads its heap and JVM options from /opt/flink/conf/config.yaml alone, and the container does not write that file; write it whole in files, with env.java.opts.taskmanager: -Xlog:gc",
		line:    "tm: dist & {"},
	{name: "C9 Flink memory in FLINK_PROPERTIES", file: flinkFile,
		old: `SPATEC_BROKERS:             env.endpoints.brokers`, new: `SPATEC_BROKERS:             env.endpoints.brokers` + "\n\t\tFLINK_PROPERTIES: \"taskmanager.memory.process.size: 21504m\"",
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: container tm sets taskmanager.memory.process.size: 21504m in its environment FLINK_PROPERTIES; Flink's memory is spatec's to set, from the process's size 21 GiB, in /opt/flink/conf/config.yaml: remove it",
		line:    `FLINK_PROPERTIES: "taskmanager.memory.process.size: 21504m"`},
	{name: "C9 Flink process too small for a heap", file: flinkFile,
		old: "processSize: 21504 * MiB", new: "processSize: 512 * MiB",
		env: "bench-96c", entrant: "flink", rule: "C9",
		message: "flink:default on bench-96c: Flink taskmanager tm has a process of 512 MiB, which leaves a heap of 0 GiB after 192 MiB of overhead, 256 MiB of metaspace, 320 MiB of off-heap memory and network buffers; give it a process of at least 1 GiB"},
	// C10: parallelism equals partitions.
	{name: "C10 parallelism below partitions", file: vectorFile,
		old: "value:       env.partitions", new: "value:       8",
		env: "bench-96c", entrant: "vector", rule: "C10",
		message: "vector:default on bench-96c: parallelism knob sources is 8; bench-96c has 32 partitions"},
	{name: "C10 variant sets the parallelism", file: vectorFile,
		old: "batch_max_events: 26_214", new: "batch_max_events: 26_214\n\t\t\t\tsources:          8",
		env: "bench-96c", entrant: "vector", variant: "small-batch", rule: "C10",
		message: "vector:small-batch on bench-96c: variant small-batch sets parallelism knob sources to 8; bench-96c has 32 partitions and parallelism must equal them; remove sources from the variant",
		line:    "sources:          8"},
	// What Flink runs with is its file's parallelism, not the knob.
	{name: "C10 Flink parallelism written by hand", file: flinkFile,
		old: `"parallelism.default":           "\(knobs.slots.value)"`, new: `"parallelism.default":           "8"`,
		env: "bench-96c", entrant: "flink", rule: "C10",
		message: `flink:default on bench-96c: container jm's /opt/flink/conf/config.yaml sets parallelism.default: 8, which Flink's jobmanager runs with; bench-96c has 32 partitions and parallelism must equal them; write parallelism.default from the parallelism knob ("\(knobs.slots.value)")`,
		line:    `"/opt/flink/conf/config.yaml": yaml.Marshal(_config)`,
		fix:     [2]string{`"parallelism.default":           "8"`, `"parallelism.default":           "\(knobs.slots.value)"`}},
	{name: "C10 Flink parallelism that is right on one host only", file: flinkFile,
		old: `"parallelism.default":           "\(knobs.slots.value)"`, new: `"parallelism.default":           "32"`,
		env: "local-containers", entrant: "flink", rule: "C10",
		message: `flink:default on local-containers: container jm's /opt/flink/conf/config.yaml sets parallelism.default: 32, which Flink's jobmanager runs with; local-containers has 1 partitions and parallelism must equal them`,
		line:    `"/opt/flink/conf/config.yaml": yaml.Marshal(_config)`},
	{name: "C10 Flink slots written by hand", file: flinkFile,
		old: `"jobmanager.rpc.address":                 "jm"`, new: `"jobmanager.rpc.address":                 "jm"` + "\n\t\t\"taskmanager.numberOfTaskSlots\": \"8\"",
		env: "bench-96c", entrant: "flink", rule: "C10", line: `"taskmanager.numberOfTaskSlots": "8"`,
		message: `taskmanager.numberOfTaskSlots in Flink 2.2.1's configuration sets what the contract owns: the entrant's parallelism knob`},
	{name: "C15 rounding hint stays positive", file: benchFile,
		old: "cpus:   3\n", new: "cpus:   0.004\n",
		env: "bench-96c", entrant: "vector", rule: "C15",
		message: "bench-96c: infra.broker.cpus is 0.004; CPUs take at most two decimal places (0.01 CPU is the quota grain); write 0.01"},
	// C11: infrastructure declared with caps and images.
	{name: "C11 container without image", file: benchFile,
		old: `image: ref: "clickhouse/clickhouse-server:26.3"
			version`, new: `version`,
		env: "bench-96c", entrant: "vector", rule: "C11",
		message: "bench-96c: clickhouse runs as a container but declares no image", line: `name: "spatec-clickhouse"`, anyPosInFiles: true},
	{name: "C11 embedded broker in an authoritative environment", file: retFile,
		old: `run:  "container"
			name: "spatec-redpanda"`, new: `run:  "embedded"
			name: "spatec-redpanda"`,
		env: "retired-32c", entrant: "vector", rule: "C11",
		message: `retired-32c: broker runs "embedded" in an authoritative environment`, line: `run:  "embedded"`},
	{name: "C11 service spatec cannot reach", file: localFile,
		old: "addr:     \"127.0.0.1:9000\"\n\t\t\thostAddr: addr", new: "addr:     \"127.0.0.1:9000\"",
		env: "local", entrant: "reference", rule: "C11",
		message: `local: clickhouse runs "external" on the host network and declares no hostAddr, so spatec cannot reach it; add hostAddr`,
		line:    `run:      "external"`},
	// supports names only environments of the tree.
	{name: "supports: unknown environment", file: vectorFile,
		old: `supports: ["bench-96c", "retired-32c", "c8g-8xl-ec2-docker"]`, new: `supports: ["bench96c", "retired-32c", "c8g-8xl-ec2-docker"]`,
		env: "", entrant: "vector", rule: "supports",
		message: `vector: supports names "bench96c", which is not an environment of the tree`, line: `supports: ["bench96c", "retired-32c", "c8g-8xl-ec2-docker"]`},
	// implements names only workloads of the tree.
	{name: "implements: unknown workload", file: vectorFile,
		old: `implements: ["sensor-batch", "json-rows"]`, new: `implements: ["sensor-bacth", "json-rows"]`,
		env: "", entrant: "vector", rule: "implements",
		message:    `vector: implements names "sensor-bacth", which is not a workload of the tree (it has: sensor-batch, json-rows); did you mean "sensor-batch"? write "sensor-batch"`,
		spatecOnly: "a CUE package cannot list its sibling packages, so no schema knows every workload's name"},
	// C15: closed files, integer bytes, two decimals.
	{name: "C15 container build made two ways", file: referenceFile,
		old: `build: program: "./cmd/spatec-reference"`,
		new: `build: {program: "./cmd/spatec-reference", debian: {suite: "bookworm", packages: ["tzdata"], entrypoint: ["/x"]}}`,
		env: "local", entrant: "reference", rule: "C15",
		message: "reference:default on local: container consumer declares build with 2 ways to make its image; give exactly one: program (a Go program of this module) or debian"},
	{name: "C15 compile step with two build tools", file: spateFile,
		old: `cargo: {crate: "entrants/spate/arm", bin: "spate-arm"}`, new: `cargo: {crate: "entrants/spate/arm", bin: "spate-arm"}, maven: {project: "entrants/flink/job", jar: "job.jar"}`,
		env: "bench-96c", entrant: "spate", rule: "C15",
		message: "spate:native on bench-96c: container arm compiles program 0 of its image with 2 build tools; give exactly one: cargo (a Rust crate of this tree) or maven (a Maven project of this tree)",
		line:    "compile: [{"},
	{name: "C15 service build made no way", file: "envs/k8s-pods/env.cue",
		old: `build: program: "./cmd/spatec-broker"`, new: `build: {}`,
		env: "k8s-pods", entrant: "reference", rule: "C15",
		message: "k8s-pods: broker declares build with 0 ways to make its image"},
	{name: "C15 unknown field", file: vectorFile,
		old: `role:   "data-plane"`, new: `role:   "data-plane"` + "\n\t\tthreads: 4",
		env: "bench-96c", entrant: "vector", rule: "C15",
		message: `unknown field "threads" at entrant.containers.vector.threads`, line: "threads: 4"},
	{name: "C15 three decimals", file: benchFile,
		old: "cpus:   3\n", new: "cpus:   3.125\n",
		env: "bench-96c", entrant: "vector", rule: "C15",
		message: "bench-96c: infra.broker.cpus is 3.125; CPUs take at most two decimal places"},
	{name: "C15 a reserve with three decimals, at its own line", file: retFile,
		old: "cpus:   7\n", new: "cpus:   7.005\n",
		env: "retired-32c", entrant: "vector", rule: "C15",
		message: "retired-32c: reserve.cpus is 7.005; CPUs take at most two decimal places (0.01 CPU is the quota grain); write 7",
		notIn:   "container vector", line: "cpus:   7.005",
		fix: [2]string{"cpus:   7.005", "cpus:   7.0"}},
	{name: "C15 a variant sets a misspelt knob, at its line", file: vectorFile,
		old: `set: format: "json_each_row"`, new: `set: fromat: "json_each_row"`,
		env: "bench-96c", entrant: "vector", variant: "json-each-row", rule: "C15",
		message: "variant json-each-row sets fromat, which is not a knob of the entrant (it has: batch_max_events, batch_timeout_secs, buffer_events, format, request_concurrency, sources); did you mean format? write format",
		notIn:   "required field missing",
		fix:     [2]string{`set: fromat:`, `set: format:`}},
	{name: "C15 memory written as a string", file: benchFile,
		old: "envelope: memory: 96 * GiB", new: `envelope: memory: "96G"`,
		env: "bench-96c", entrant: "vector", rule: "C15",
		message: "memory is integer bytes, not a string: write 96 * GiB",
		fix:     [2]string{`envelope: memory: "96G"`, "envelope: memory: 96 * GiB"}},
	{name: "C15 memory not integer bytes", file: flinkFile,
		old: "memory:  env.controlPlane.memory", new: "memory:  1.5 * schema.GiB",
		env: "bench-96c", entrant: "flink", rule: "C15", message: "memory is integer bytes"},
	// C16: pins.
	{name: "C16 version probe names no container", file: vectorFile,
		old: "pin:       \"0.57.0\"\n\t\tcontainer: \"vector\"", new: "pin:       \"0.57.0\"\n\t\tcontainer: \"vectr\"",
		env: "bench-96c", entrant: "vector", rule: "C16",
		message: "vector:default on bench-96c: version.container names vectr, which is not one of its containers", line: `container: "vectr"`},
	{name: "C15 validator in no container", file: vectorFile,
		old: `validate: [{container: "vector",`, new: `validate: [{container: "vectr",`,
		env: "bench-96c", entrant: "vector", rule: "C15",
		message: "vector:default on bench-96c: validate[0] runs in container vectr, which is not one of its containers", line: `validate: [{container: "vectr",`},
	{name: "C16 version pattern that does not compile", file: vectorFile,
		old: `match: "^vector ([0-9.]+)"`, new: `match: "^vector ([0-9.]+"`,
		env: "bench-96c", entrant: "vector", rule: "C16",
		message: `vector:default on bench-96c: version.match "^vector ([0-9.]+" is not a regular expression`},
	{name: "C16 no pinned version", file: vectorFile,
		old: `pin:       "0.57.0"`, new: `pin:       ""`,
		env: "bench-96c", entrant: "vector", rule: "C16", message: "invalid value"},
	{name: "C16 version block left out, at the entrant's file, saying what it holds", file: vectorFile,
		old: "\tversion: {\n\t\tpin:       \"0.57.0\"\n\t\tcontainer: \"vector\"\n\t\tcommand: [\"vector\", \"--version\"]\n\t\tmatch: \"^vector ([0-9.]+)\"\n\t}\n", new: "",
		env: "bench-96c", entrant: "vector", rule: "C16",
		message: "entrant.version is missing; it is required (the schema says: version says how the version is read inside the image and which version is pinned (C16)): add it",
		line:    `name:        "vector"`,
		notIn:   "p.message"},
	// Kubernetes: what the cluster applies must be what the plan declares.
	{name: "C6 fractional CPUs on exclusive cores", file: k8sFile,
		old: "cpus:   0.05", new: "cpus:   0.55",
		env: "k8s-single", entrant: "reference", rule: "C6", lineInFile: referenceFile, line: "cpus:   envelope.cpus",
		message: "reference:default on k8s-single: container consumer has 0.50 CPUs; k8s-single runs on Kubernetes with exclusive cores (the kubelet's static CPU manager), which a container gets only with whole CPUs in a Guaranteed pod"},
	{name: "C6 a volume on Kubernetes", file: referenceFile,
		old: `image: "spatec-reference:0.1.1"`, new: `image: "spatec-reference:0.1.1"` + "\n\t\tvolumes: \"/scratch\": \"scratch\"",
		env: "k8s-single", entrant: "reference", rule: "C6",
		message: "reference:default on k8s-single: container consumer mounts volume scratch at /scratch; k8s-single runs on Kubernetes, whose pods share no volume spatec makes, so it could not be applied as written",
		line:    `volumes: "/scratch": "scratch"`},
	{name: "C11 pod placed two ways", file: k8sFile,
		old: `nodes: arm: node: "spatec-node"`, new: `nodes: arm: {node: "spatec-node", labels: role: "bench"}`,
		env: "k8s-single", entrant: "reference", rule: "C11",
		message: "k8s-single: kubernetes.nodes.arm places its pods 2 ways; give exactly one: node (a node's name) or labels"},
	// Studies: every point is checked like any variant.
	{name: "C10 study point sets the parallelism", file: referenceFile,
		old: "flush_ms: [100, 500]", new: "flush_ms: [100, 500]\n\t\t\tconsumers: [2]",
		env: "local", entrant: "reference", variant: "batch-flush-1", rule: "C10",
		message: "reference:batch-flush-1 on local: variant batch-flush-1 sets parallelism knob consumers to 2; local has 4 partitions and parallelism must equal them", line: "consumers: [2]"},
	{name: "studies: point sets no knob of the entrant", file: referenceFile,
		old: "flush_ms: [100, 500]", new: "flush_ms: [100, 500]\n\t\t\tlinger_ms: [5]",
		env: "local", entrant: "reference", variant: "batch-flush-1", rule: "studies",
		message: "reference:batch-flush-1 on local: study batch-flush point 1 sets linger_ms, which is not a knob of the entrant (it has: batch_rows, consumers, fault, flush_ms)",
		line:    `studies: "batch-flush": {`},
	{name: "studies: a size beyond the dataset", file: referenceFile,
		old: "sizes: [div(workload.messages, 4), workload.messages]", new: "sizes: [50_000, 400_000]",
		env: "local", entrant: "reference", variant: "default", rule: "studies",
		message: "reference:default on local: study batch-flush runs its points on the first 400000 messages, but local's json-rows dataset holds 200000; give sizes no larger than it"},
	{name: "studies: grid and points both", file: referenceFile,
		old: "flush_ms: [100, 500]\n\t\t}", new: "flush_ms: [100, 500]\n\t\t}\n\t\tpoints: [{batch_rows: 1}]",
		env: "local", entrant: "reference", variant: "default", rule: "studies",
		message: "reference:default on local: study batch-flush is declared 2 ways; give exactly one: grid", line: `studies: "batch-flush": {`},
	// Footprint studies: an axis, a floor below the envelope the engine
	// can enforce, a resolution it can set, a fraction and a count of
	// repetitions in bound, a variant the entrant has.
	{name: "footprint: an axis that is no cap", file: referenceFile,
		old: "axis:       \"memory\"\n\t\t\tfloor:      16", new: "axis:       \"heap\"\n\t\t\tfloor:      16", line: `axis:       "heap"`,
		env: "local", entrant: "reference", rule: "C15",
		message: `entrant.footprints.memory.axis: invalid value "heap" (allowed: "memory", "cpus")`},
	{name: "footprint: a floor not below the envelope", file: referenceFile,
		old: "floor:      16 * schema.MiB", new: "floor:      2 * schema.GiB",
		env: "local", entrant: "reference", rule: "footprint",
		message: "footprint study memory has floor 2 GiB, not below local's envelope of 1 GiB (envelope.memory); the study steps down from the envelope: write floor: 512 * schema.MiB",
		fix:     [2]string{"floor:      2 * schema.GiB", "floor:      512 * schema.MiB"}},
	// Where half the envelope is below what the engine can set, no floor
	// passes: the hint names the field that must move.
	{name: "footprint: no floor fits the envelope", file: localFile,
		old: "envelope: memory: 1 * GiB", new: "envelope: memory: 8 * schema.MiB",
		env: "local", entrant: "reference", rule: "footprint", lineInFile: referenceFile, line: "floor:      16 * schema.MiB",
		message: "footprint study memory has floor 16 MiB, not below local's envelope of 8 MiB (envelope.memory); the study steps down from the envelope: no floor fits between the engine's 6 MiB and that envelope: raise local's envelope.memory"},
	{name: "footprint: a memory floor the engine cannot set", file: referenceFile,
		old: "floor:      16 * schema.MiB", new: "floor:      1000",
		env: "local", entrant: "reference", rule: "footprint",
		message: "footprint study memory has floor 1000 bytes; the engine refuses a memory limit below 6 MiB: write floor: 6 * schema.MiB",
		fix:     [2]string{"floor:      1000", "floor:      6 * schema.MiB"}},
	{name: "footprint: a memory resolution finer than a MiB", file: referenceFile,
		old: "resolution: 8 * schema.MiB", new: "resolution: 100",
		env: "local", entrant: "reference", rule: "footprint",
		message: "footprint study memory has resolution 100 bytes; caps are set in whole MiB: write resolution: 1 * schema.MiB",
		fix:     [2]string{"resolution: 100", "resolution: 1 * schema.MiB"}},
	{name: "footprint: a CPU floor below the quota grain", file: referenceFile,
		old: "floor:      0.05", new: "floor:      0.001",
		env: "local", entrant: "reference", rule: "footprint",
		message: "footprint study cpus has floor 0.001 CPUs; 0.01 CPU is the quota grain: write floor: 0.01",
		fix:     [2]string{"floor:      0.001", "floor:      0.01"}},
	{name: "footprint: a CPU resolution below the quota grain", file: referenceFile,
		old: "resolution: 0.05", new: "resolution: 0.001",
		env: "local", entrant: "reference", rule: "footprint",
		message: "footprint study cpus has resolution 0.001 CPUs; 0.01 CPU is the quota grain: write resolution: 0.01",
		fix:     [2]string{"resolution: 0.001", "resolution: 0.01"}},
	{name: "footprint: a degradation fraction out of bound", file: referenceFile,
		old: "floor:      16 * schema.MiB", new: "floor:      16 * schema.MiB\n\t\t\tfraction:   1.5",
		env: "local", entrant: "reference", rule: "C15",
		message: "entrant.footprints.memory.fraction: invalid value 1.5 (out of bound <1)", line: "fraction:   1.5"},
	{name: "footprint: no repetitions", file: referenceFile,
		old: "floor:      16 * schema.MiB", new: "floor:      16 * schema.MiB\n\t\t\treps:       0",
		env: "local", entrant: "reference", rule: "C15",
		message: "entrant.footprints.memory.reps: invalid value 0 (out of bound >0)", line: "reps:       0"},
	{name: "footprint: a variant the entrant does not have", file: referenceFile,
		old: "floor:      16 * schema.MiB", new: "floor:      16 * schema.MiB\n\t\t\tvariant:    \"defualt\"",
		env: "local", entrant: "reference", rule: "footprint",
		message: "footprint study memory runs variant defualt, which the entrant does not declare (it has: default, json-rows, small-batch, wrong-transform)",
		line:    `variant:    "defualt"`},
	// Failure scenarios: a component spatec runs and can act on, an action
	// whose pause means something, a bound shorter than the drain's, and
	// a declared guarantee of a known kind.
	{name: "scenario: a service spatec does not run", file: localFile,
		old: "envelope: memory: 1 * GiB", new: "envelope: memory: 1 * GiB\n\tscenarios: \"broker-restart\": {component: \"broker\", action: \"restart\"}",
		env: "local", entrant: "reference", rule: "scenario", line: `scenarios: "broker-restart"`,
		message: "local: scenario broker-restart hits the broker, which runs embedded rather than in a container spatec started, so spatec cannot act on it"},
	// A schema default is never shown as a value the author wrote: the
	// refusal says what is allowed.
	{name: "default: a footprint's step out of bounds", file: referenceFile,
		old: "step:       0.001", new: "step:       1.5",
		env: "local", entrant: "reference", rule: "C15", alone: true,
		message: "entrant.footprints.smoke.step: invalid value 1.5 (out of bound <1)", notIn: "0.5",
		fix: [2]string{"step:       1.5", "step:       0.5"}},
	{name: "default: a reserve below zero", file: benchFile,
		old: "partitions: 32", new: "partitions: 32\n\treserve: cpus: -1",
		env: "bench-96c", entrant: "vector", rule: "C15", line: "reserve: cpus: -1", alone: true,
		message: "env.reserve.cpus: invalid value -1 (out of bound >=0)", notIn: "conflicting values 0",
		fix: [2]string{"reserve: cpus: -1", "reserve: cpus: 0"}},
	{name: "default: an architecture no platform names", file: benchFile,
		old: "partitions: 32", new: "partitions: 32\n\tarch: \"arm\"",
		env: "bench-96c", entrant: "vector", rule: "C15", line: `arch: "arm"`, alone: true,
		message: `env.arch: invalid value "arm" (allowed: "amd64", "arm64")`, notIn: "conflicting values",
		fix: [2]string{`arch: "arm"`, `arch: "amd64"`}},
	{name: "default: a drain timeout written as a string", file: localContainersFile,
		old: "messages:     200_000\n\t\t\tdrainTimeout: 300", new: "messages:     200_000\n\t\t\tdrainTimeout: \"300\"",
		env: "local-containers", entrant: "reference", rule: "C15", line: `drainTimeout: "300"`,
		message: "drainTimeout: conflicting values \"300\" and int (mismatched types string and int); a number, not a string: write drainTimeout: 300", notIn: "600",
		fix: [2]string{`drainTimeout: "300"`, "drainTimeout: 300"}},
	{name: "default: a key given twice beside its default", file: benchFile,
		old: "partitions: 32", new: "partitions: 32\n\treserve: cpus: 1\n\treserve: cpus: 2",
		env: "bench-96c", entrant: "vector", rule: "C15", line: "reserve: cpus: 2", alone: true,
		message: "env.reserve.cpus: conflicting values 2 and 1; the field is given two values", notIn: "conflicting values 0"},
	// An envelope written without its unit is one problem, at the
	// environment's line, not every arm's heap and footprint after it.
	{name: "C1 envelope memory without a unit", file: localContainersFile,
		old: "envelope: memory: 2 * GiB", new: "envelope: memory: 2048",
		env: "local-containers", entrant: "reference", rule: "C1", alone: true,
		message: "local-containers: envelope.memory is 2048 bytes, below the 6 MiB the engine runs a container in; memory is integer bytes: write it with a unit, e.g. envelope: memory: 2048 * schema.MiB",
		fix:     [2]string{"envelope: memory: 2048", "envelope: memory: 2048 * schema.MiB"}},
	// A knob's parallelism flag written as a string is one problem at its
	// line: not the operations, files, heaps and versions made from it.
	{name: "knobs: parallelism written as a string (Kafka engine)", file: "entrants/clickhouse-kafka-engine/chkafka.cue",
		old: "parallelism: true", new: `parallelism: "true"`,
		env: "bench-96c", entrant: "clickhouse-kafka-engine", rule: "knobs", alone: true,
		message: `entrant.knobs.num_consumers.parallelism: conflicting values "true" and bool (mismatched types string and bool); a boolean, not a string: write parallelism: true`,
		notIn:   "version is missing",
		fix:     [2]string{`parallelism: "true"`, "parallelism: true"}},
	{name: "knobs: parallelism written as a string (Connect)", file: connectFile,
		old: "parallelism: true", new: `parallelism: "true"`,
		env: "bench-96c", entrant: "kafka-connect", rule: "knobs", alone: true,
		message: `entrant.knobs.tasks.parallelism: conflicting values "true" and bool (mismatched types string and bool); a boolean, not a string: write parallelism: true`,
		notIn:   "a memory size is integer bytes",
		fix:     [2]string{`parallelism: "true"`, "parallelism: true"}},
	// A package with no name makes none of its plans: said at its file.
	{name: "C15 an entrant's name deleted", file: vectorFile,
		old: "\tname:        \"vector\"\n", new: "",
		rule: "C15", line: "#entrant: schema.#Entrant & {", alone: true,
		message: `entrants/vector: entrant.name is missing; it is required (it is how plans and the command line name it), and without it none of its plans is made: add name: "vector"`},
	{name: "scenario: a restart with a pause, said once", file: localContainersFile,
		old: "component: \"broker\"\n\t\t\taction:    \"restart\"", new: "component: \"broker\"\n\t\t\taction:    \"restart\"\n\t\t\tpause:     5",
		env: "local-containers", entrant: "reference", rule: "scenario", line: "pause:     5", alone: true,
		message: "local-containers: scenario broker-restart restarts the broker at once, so a pause of 5 s is never taken; write pause: 0",
		fix:     [2]string{"pause:     5", "pause:     0"}},
	{name: "scenario: a service the environment does not have", file: localFile,
		old: "envelope: memory: 1 * GiB", new: "envelope: memory: 1 * GiB\n\tscenarios: \"registry-restart\": {component: \"registry\", action: \"restart\"}",
		env: "local", entrant: "reference", rule: "scenario", line: `scenarios: "registry-restart"`,
		message: "local: scenario registry-restart hits the registry, which the environment does not have (its infrastructure: broker, clickhouse); write \"data-plane\"", notIn: `"broker" or`,
		fix: [2]string{`component: "registry"`, `component: "data-plane"`}},
	{name: "scenario: on Kubernetes, other than the data plane killed", file: k8sFile,
		old: "envelope: memory: 1 * GiB", new: "envelope: memory: 1 * GiB\n\tscenarios: \"arm-paused\": {component: \"data-plane\", action: \"pause\", pause: 10}",
		env: "k8s-single", entrant: "reference", rule: "scenario", line: `scenarios: "arm-paused"`,
		message: "k8s-single: scenario arm-paused pauses the data-plane on Kubernetes, where spatec can only kill the arm's data plane (the pod's restartPolicy starts it again) or delete its pod (its ReplicaSet makes another); write component: \"data-plane\" with action: \"kill\" or \"delete\", or declare it on a Docker environment",
		fix:     [2]string{`action: "pause", pause: 10`, `action: "delete"`}},
	{name: "scenario: a pod deleted where nothing makes it again", file: localContainersFile,
		old: "component: \"data-plane\"\n\t\t\taction:    \"kill\"", new: "component: \"data-plane\"\n\t\t\taction:    \"delete\"",
		env: "local-containers", entrant: "reference", rule: "scenario", line: `action:    "delete"`,
		message: "local-containers: scenario data-plane-kill deletes the data-plane, but on docker nothing makes a deleted container again (on Kubernetes the data plane's ReplicaSet makes a new pod); write action: \"kill\" (its restart policy starts it again), or declare it on a Kubernetes environment",
		fix:     [2]string{`action:    "delete"`, `action:    "kill"`}},
	{name: "scenario: a deleted pod made again by spatec", file: k8sFile,
		old: "envelope: memory: 1 * GiB", new: "envelope: memory: 1 * GiB\n\tscenarios: \"arm-deleted\": {component: \"data-plane\", action: \"delete\", pause: 5}",
		env: "k8s-single", entrant: "reference", rule: "scenario", line: `scenarios: "arm-deleted"`,
		message: "k8s-single: scenario arm-deleted deletes the arm's pod, which its ReplicaSet makes again, not spatec after a pause; write pause: 0",
		fix:     [2]string{`, pause: 5}`, `}`}},
	{name: "scenario: a pause of no time", file: localContainersFile,
		old: "action:    \"pause\"\n\t\t\tpause:     10", new: "action:    \"pause\"\n\t\t\tpause:     0",
		env: "local-containers", entrant: "reference", rule: "scenario", line: "pause:     0",
		message: "local-containers: scenario clickhouse-pause pauses the clickhouse for 0 s; write pause: 10",
		fix:     [2]string{"action:    \"pause\"\n\t\t\tpause:     0", "action:    \"pause\"\n\t\t\tpause:     10"}},
	{name: "scenario: a restart with a pause never taken", file: localContainersFile,
		old: "component: \"broker\"\n\t\t\taction:    \"restart\"", new: "component: \"broker\"\n\t\t\taction:    \"restart\"\n\t\t\tpause:     5",
		env: "local-containers", entrant: "reference", rule: "scenario", line: "pause:     5",
		message: "local-containers: scenario broker-restart restarts the broker at once, so a pause of 5 s is never taken; write pause: 0",
		fix:     [2]string{"pause:     5", "pause:     0"}},
	{name: "scenario: a data plane started again by spatec", file: localContainersFile,
		old: "component: \"data-plane\"\n\t\t\taction:    \"kill\"", new: "component: \"data-plane\"\n\t\t\taction:    \"kill\"\n\t\t\tpause:     5",
		env: "local-containers", entrant: "reference", rule: "scenario", line: "pause:     5",
		message: "local-containers: scenario data-plane-kill kills the arm's data plane, which its own restart policy starts again (the entrant's restart), not spatec after a pause; write pause: 0",
		fix:     [2]string{"pause:     5", "pause:     0"}},
	{name: "scenario: a recovery bound as long as the drain", file: localContainersFile,
		old: "component: \"data-plane\"\n\t\t\taction:    \"kill\"", new: "component: \"data-plane\"\n\t\t\taction:    \"kill\"\n\t\t\trecovery:  300",
		env: "local-containers", entrant: "reference", rule: "scenario", line: "recovery:  300",
		message: "local-containers: scenario data-plane-kill waits up to 300 s through the fault (pause + recovery), as long as workload json-rows's whole drain may take (drainTimeout 300 s); write recovery: 149",
		fix:     [2]string{"recovery:  300", "recovery:  149"}},
	{name: "scenario: an action spatec does not know", file: localContainersFile,
		old: "action:    \"pause\"", new: "action:    \"freeze\"",
		env: "local-containers", entrant: "reference", rule: "C15",
		message: `env.scenarios."clickhouse-pause".action: invalid value "freeze" (allowed: "restart", "kill", "pause", "partition", "delete")`},
	{name: "scenario: a partition of the data plane from itself", file: localContainersFile,
		old: "component: \"clickhouse\"\n\t\t\taction:    \"partition\"", new: "component: \"data-plane\"\n\t\t\taction:    \"partition\"",
		env: "local-containers", entrant: "reference", rule: "scenario", line: `component: "data-plane"`,
		message: "local-containers: scenario clickhouse-partition partitions the arm's data plane, but a partition is between the arm and a service, named by component; write component: \"clickhouse\" (or another service the environment runs in a container)",
		fix:     [2]string{"component: \"data-plane\"\n\t\t\taction:    \"partition\"", "component: \"clickhouse\"\n\t\t\taction:    \"partition\""}},
	{name: "scenario: a partition that lasts no time", file: localContainersFile,
		old: "action:    \"partition\"\n\t\t\tpause:     10", new: "action:    \"partition\"\n\t\t\tpause:     0",
		env: "local-containers", entrant: "reference", rule: "scenario", line: "pause:     0",
		message: "local-containers: scenario clickhouse-partition partitions the clickhouse for 0 s; write pause: 10",
		fix:     [2]string{"action:    \"partition\"\n\t\t\tpause:     0", "action:    \"partition\"\n\t\t\tpause:     10"}},
	{name: "scenario: a partition on the host's network", file: localFile,
		old: "envelope: memory: 1 * GiB", new: "envelope: memory: 1 * GiB\n\tscenarios: \"cut\": {component: \"clickhouse\", action: \"partition\", pause: 10}",
		env: "local", entrant: "reference", rule: "scenario", line: `scenarios: "cut"`,
		message: "local: scenario cut partitions the arm from the clickhouse on network \"host\", where they share the host's network and cannot be cut apart alone; declare it on an environment whose runs have their own network (network: \"bridge\")"},
	{name: "scenario: a point of the drain out of bound", file: localContainersFile,
		old: "action:    \"pause\"", new: "action:    \"pause\"\n\t\t\tat:        1.5",
		env: "local-containers", entrant: "reference", rule: "C15", line: "at:        1.5",
		message: `invalid value 1.5 (out of bound <1)`},
	{name: "scenario: a guarantee of no known kind", file: referenceFile,
		old: `kind:   "at-least-once"`, new: `kind:   "at-most-once"`,
		env: "local-containers", entrant: "reference", rule: "C15",
		message: `entrant.guarantee.kind: invalid value "at-most-once" (allowed: "at-least-once", "exactly-once", "none")`},
	// Workloads: a plan runs one the arm implements and the environment
	// hosts, and an environment hosting a registry-framed one has a
	// registry.
	{name: "workload: runs one it does not implement", file: referenceFile,
		old: `implements: ["sensor-batch", "json-rows"]`, new: `implements: ["json-rows"]
	runs: "sensor-batch"`,
		env: "local", entrant: "reference", rule: "workload",
		message: "reference:default on local: runs workload sensor-batch, which it does not implement (it implements json-rows); run one of those, or implement sensor-batch and add it to implements",
		line:    `runs: "sensor-batch"`},
	{name: "workload: implements none the environment hosts", file: referenceFile,
		old: `implements: ["sensor-batch", "json-rows"]`, new: `implements: ["sensor-batch"]`,
		env: "local", entrant: "reference", rule: "workload",
		message: "reference:default on local: reference implements sensor-batch, and local hosts json-rows; implement one that local hosts, or take local out of supports",
		line:    `supports: ["local", "local-containers", "k8s-single", "k8s-pods", "k8s-two"]`},
	{name: "C11 registry-framed workload without a registry", file: localFile,
		old: `workloads: "json-rows": jsonrows.#workload & {`, new: `workloads: "sensor-batch": sensorbatch.#workload & {messages: 1000}
	workloads: "json-rows": jsonrows.#workload & {`,
		old2: `jsonrows "spatec.dev/spatec/workloads/json-rows:jsonrows"`, new2: `jsonrows "spatec.dev/spatec/workloads/json-rows:jsonrows"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch:sensorbatch"`,
		env: "local", entrant: "reference", rule: "C11",
		message: "local: hosts sensor-batch, whose messages are framed for a schema registry, but declares none; add infra.registry, or a broker with schemaRegistry: {}",
		line:    `workloads: "sensor-batch": sensorbatch.#workload & {messages: 1000}`},
	// Variants and knobs.
	{name: "variants: two defaults", file: vectorFile,
		old: `doc: "a tenth of the default batch, to show the batch-size curve"`, new: `doc: "a tenth of the default batch, to show the batch-size curve"` + "\n\t\t\tdefault: true",
		env: "bench-96c", entrant: "vector", rule: "variants",
		message: "vector:default on bench-96c: needs exactly one default variant, got 2", line: "variants: {"},
	{name: "C15 knob of the wrong type", file: vectorFile,
		old: "value: *262_144 | int", new: `value: "lots"`,
		env: "bench-96c", entrant: "vector", rule: "C15",
		message: `knob batch_max_events has a value of the wrong type (conflicting values "lots" and int (mismatched types string and int)); values are exact (C15): give batch_max_events a value of the type its knob declares`,
		notIn:   "encoding/yaml", fix: [2]string{`value: "lots"`, "value: 100_000"}},
	{name: "C15 knob of the wrong type set by a variant", file: vectorFile,
		old: "batch_max_events: 26_214", new: `batch_max_events: "lots"`,
		env: "bench-96c", entrant: "vector", variant: "small-batch", rule: "C15",
		message: "vector:small-batch on bench-96c: knob batch_max_events has a value of the wrong type",
		notIn:   `plans."bench-96c"`, fix: [2]string{`batch_max_events: "lots"`, "batch_max_events: 26_214"}},
	{name: "C4 no CPU left for spatec's driver", file: benchFile,
		old: "partitions: 32", new: "partitions: 70",
		env: "bench-96c", entrant: "vector", rule: "C4",
		message: "bench-96c: the caps leave 0 of the host's 96 cores and the reserve holds back 0, less than the 0.05 CPU spatec's driver and sampler need beside them (#DriverFloor); lower partitions to at most 59, which leaves that floor and the 1 CPU a control plane may take (controlPlane.cpus)",
		fix:     [2]string{"partitions: 70", "partitions: 59"}},
	{name: "C4 a control plane beside an envelope the cores bound", file: benchFile,
		old: "partitions: 32", new: "partitions: 70\n\treserve: cpus: 0.05",
		env: "bench-96c", entrant: "flink", rule: "C4", lineInFile: flinkFile, line: "cpus:    env.controlPlane.cpus",
		message: "flink:default on bench-96c: infra 35 + envelope 60.95 + control plane 1 + reserve 0.05 = 97.00 exceeds the host's 96 (cpus), and the environment leaves nothing beside its envelope for a control plane; its envelope is bound by the host's cores, so lower partitions in bench-96c to at most 59",
		fix:     [2]string{"partitions: 70", "partitions: 59"}},
	{name: "C4 envelope larger than the host leaves", file: benchFile,
		old: "envelope: memory: 96 * GiB", new: "envelope: memory: 190 * GiB",
		env: "bench-96c", entrant: "flink", rule: "C4",
		message: "bench-96c: infra 40 GiB + envelope 190 GiB + reserve 0 GiB = 230 GiB exceeds the host's 192 GiB (memory) before any entrant adds to it; lower envelope.memory to at most 150 GiB, which leaves the 2 GiB a control plane may take (controlPlane.memory)",
		notIn:   "control plane 2 GiB", fix: [2]string{"envelope: memory: 190 * GiB", "envelope: memory: 150 * GiB"}},
	{name: "C3 misspelt data-plane role, the cause alone", file: vectorFile,
		old: `role:   "data-plane"`, new: `role:   "data-plan"`,
		env: "bench-96c", entrant: "vector", rule: "C3",
		message: `container vector has role "data-plan"; the only roles are "data-plane" and "control-plane"; write role: "data-plane"`,
		notIn:   "needs exactly one data-plane", fix: [2]string{`role:   "data-plan"`, `role:   "data-plane"`}},
	{name: "C15 control plane's cpus with three decimals, hint within its bound", file: flinkFile,
		old: "cpus:    env.controlPlane.cpus", new: "cpus:    1.005",
		env: "bench-96c", entrant: "flink", rule: "C15",
		message: "container jm has cpus 1.005; CPUs take at most two decimal places (0.01 CPU is the quota grain); write 1",
		fix:     [2]string{"cpus:    1.005", "cpus:    1"}},
	{name: "C15 no CPU at all", file: flinkFile,
		old: "cpus:    env.controlPlane.cpus", new: "cpus:    0",
		env: "bench-96c", entrant: "flink", rule: "C15",
		message: "entrant.containers.jm.cpus: invalid value 0 (out of bound >0); a container needs some CPU to run at all: give it at least 0.01",
		fix:     [2]string{"cpus:    0", "cpus:    0.01"}},
}

func TestMustFail(t *testing.T) {
	base := realTree(t)
	for _, c := range slices.Concat(mustFails, optionMustFails) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fsys := fstest.MapFS{}
			for k, v := range base {
				fsys[k] = v
			}
			orig := string(base[c.file].Data)
			if strings.Count(orig, c.old) != 1 {
				t.Fatalf("fixture: %q occurs %d times in %s", c.old, strings.Count(orig, c.old), c.file)
			}
			edited := strings.Replace(orig, c.old, c.new, 1)
			if c.old2 != "" {
				edited = strings.Replace(edited, c.old2, c.new2, 1)
			}
			fsys[c.file] = &fstest.MapFile{Data: []byte(edited)}

			tr := loadTree(t, fsys)
			// A problem of the tree itself, not of one plan, has no env.
			problems := tr.Broken()
			if c.env != "" {
				var p *schema.Plan
				if p, problems = tr.Resolve(c.env, c.entrant, c.variant); p != nil {
					t.Fatalf("the broken input was accepted: %s", c.name)
				}
			}
			posFile, posText := c.file, c.line
			if c.lineInFile != "" {
				posFile = c.lineInFile
			}
			if posText == "" {
				posText = c.new
			}
			wantPos := posFile + ":" + fmt.Sprint(lineOf(t, string(fsys[posFile].Data), posText))
			for _, pr := range problems {
				if pr.Rule != c.rule || !strings.Contains(pr.String(), c.message) {
					continue
				}
				if c.anyPosInFiles && strings.HasPrefix(pr.Pos, posFile+":") || pr.Pos == wantPos {
					c.checkRest(t, fsys, edited, problems)
					return
				}
				t.Fatalf("%s reported at %s, want %s:\n%s", c.rule, pr.Pos, wantPos, pr)
			}
			t.Fatalf("no %s problem containing %q; got:\n%s", c.rule, c.message, joinProblems(problems))
		})
	}
}

// checkRest checks what a must-fail case asks beyond its problem: that no
// problem says notIn, and that the hint, applied, resolves the plan clean.
func (c mustFail) checkRest(t *testing.T, fsys fstest.MapFS, edited string, problems []Problem) {
	t.Helper()
	if c.alone {
		if all := vetAll(loadTree(t, fsys)); len(all) != 1 {
			t.Errorf("spatec vet must print this one problem and nothing else; it prints %d:\n%s", len(all), joinProblems(all))
		}
	}
	if c.notIn != "" {
		for _, pr := range problems {
			if strings.Contains(pr.String(), c.notIn) {
				t.Errorf("a problem says %q, which follows from the cause or hides it:\n%s", c.notIn, joinProblems(problems))
			}
		}
	}
	if c.fix[0] == "" {
		return
	}
	if strings.Count(edited, c.fix[0]) != 1 {
		t.Fatalf("fixture: the fix's %q occurs %d times", c.fix[0], strings.Count(edited, c.fix[0]))
	}
	fixed := fstest.MapFS{}
	for k, v := range fsys {
		fixed[k] = v
	}
	fixed[c.file] = &fstest.MapFile{Data: []byte(strings.Replace(edited, c.fix[0], c.fix[1], 1))}
	if _, ps := loadTree(t, fixed).Resolve(c.env, c.entrant, c.variant); len(ps) > 0 {
		t.Errorf("the hint applied (%q → %q) still fails:\n%s", c.fix[0], c.fix[1], joinProblems(ps))
	}
}

// TestEveryProblemAtOnce breaks several rules in one file and expects each
// to be reported in the same run.
func TestEveryProblemAtOnce(t *testing.T) {
	fsys := realTree(t)
	src := string(fsys[flinkFile].Data)
	for _, r := range [][2]string{
		{"cpus:    envelope.cpus", "cpus:    30.123"},
		{"value:       env.partitions", "value:       8"},
		{`role:    "control-plane"`, `role:    "control_plane"`},
		{"processSize: 21504 * MiB", "processSize: 40 * 1024 * MiB"},
	} {
		src = strings.Replace(src, r[0], r[1], 1)
	}
	fsys[flinkFile] = &fstest.MapFile{Data: []byte(src)}
	_, problems := loadTree(t, fsys).Resolve("bench-96c", "flink", "")
	rules := map[string]bool{}
	for _, p := range problems {
		rules[p.Rule] = true
	}
	for _, r := range []string{"C3", "C9", "C10", "C15"} {
		if !rules[r] {
			t.Errorf("no %s problem among:\n%s", r, joinProblems(problems))
		}
	}
}

// TestBrokenPackageBlocksOnlyItself checks that a syntax error in one
// entrant leaves the others planning.
func TestBrokenPackageBlocksOnlyItself(t *testing.T) {
	fsys := realTree(t)
	fsys[vectorFile] = &fstest.MapFile{Data: []byte("package vector\nentrant: {\n")}
	tr := loadTree(t, fsys)
	if len(tr.Broken()) == 0 {
		t.Fatal("a syntax error must be reported")
	}
	if !strings.HasPrefix(tr.Broken()[0].Pos, vectorFile+":") {
		t.Errorf("the syntax error must point into %s, got %s", vectorFile, tr.Broken()[0])
	}
	if _, problems := tr.Resolve("bench-96c", "spate", ""); len(problems) > 0 {
		t.Errorf("spate must still plan: %v", problems)
	}
}

func lineOf(t *testing.T, src, text string) int {
	t.Helper()
	i := strings.Index(src, strings.TrimLeft(text, "\t\n"))
	if i < 0 {
		t.Fatalf("fixture: %q not in the edited file", text)
	}
	return strings.Count(src[:i], "\n") + 1
}

// vetAll is every problem `spatec vet` prints for a tree.
func vetAll(tr *Tree) []Problem {
	problems := tr.Broken()
	for _, id := range tr.Plans() {
		problems = append(problems, tr.Check(id.Env, id.Entrant, id.Variant)...)
	}
	return Dedupe(problems)
}

func joinProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// TestEveryEntrantChecksItself: an entrant added without its own plans.cue,
// or whose plans.cue leaves out an environment it supports, would be
// checked by spatec vet and not by the official `cue vet`; spatec vet says
// so, and what to add.
func TestEveryEntrantChecksItself(t *testing.T) {
	fsys := realTree(t)
	if ps := loadTree(t, fsys).Broken(); len(ps) != 0 {
		t.Fatalf("the committed tree: %s", joinProblems(ps))
	}
	ref := string(fsys[referenceFile].Data)
	ref = strings.Replace(ref, "package reference", "package another", 1)
	ref = strings.Replace(ref, `name:        "reference"`, `name:        "another"`, 1)
	fsys["entrants/another/another.cue"] = &fstest.MapFile{Data: []byte(ref)}
	want := fmt.Sprintf("entrants/another/another.cue:%d: layout: another: its package resolves none of its plans (no check field of schema.#Plans), so the official `cue vet` checks nothing of it; add entrants/another/plans.cue",
		lineOf(t, ref, "supports:"))
	if !hasProblem(loadTree(t, fsys).Broken(), want) {
		t.Fatalf("no problem %q; got:\n%s", want, joinProblems(loadTree(t, fsys).Broken()))
	}

	plans := string(fsys["entrants/reference/plans.cue"].Data)
	plans = strings.Replace(plans, "package reference", "package another", 1)
	plans = strings.Replace(plans, "\t\t\"k8s-two\":          k8stwo.env\n", "", 1)
	plans = strings.Replace(plans, "\tk8stwo \"spatec.dev/spatec/envs/k8s-two:k8stwo\"\n", "", 1)
	fsys["entrants/another/plans.cue"] = &fstest.MapFile{Data: []byte(plans)}
	want = `entrants/another/plans.cue:1: layout: another: supports k8s-two, which its check does not resolve against, so the official ` + "`cue vet`" +
		` does not check that pair; import "spatec.dev/spatec/envs/k8s-two:k8stwo" and add it to #envs`
	if ps := loadTree(t, fsys).Broken(); len(ps) != 1 || ps[0].String() != want {
		t.Fatalf("want exactly %q; got:\n%s", want, joinProblems(ps))
	}
}

func hasProblem(ps []Problem, prefix string) bool {
	for _, p := range ps {
		if strings.HasPrefix(p.String(), prefix) {
			return true
		}
	}
	return false
}

// TestEnvironmentProblemReportedOnce deletes an environment's ClickHouse
// block: the problem is named once, at the environment's own file, and
// none of its consequences is reported in any entrant or in the schema.
// TestUnmadePlansCounted: a package whose name is gone makes none of its
// plans, and the tree says how many and why, for the plan count.
func TestUnmadePlansCounted(t *testing.T) {
	fsys := realTree(t)
	for file, name := range map[string]string{vectorFile: "\tname:        \"vector\"\n", benchFile: "\tname:        \"bench-96c\"\n"} {
		src := string(fsys[file].Data)
		if strings.Count(src, name) != 1 {
			t.Fatalf("fixture: %q not once in %s", name, file)
		}
		fsys[file] = &fstest.MapFile{Data: []byte(strings.Replace(src, name, "", 1))}
	}
	got := loadTree(t, fsys).Unmade()
	// vector's plans on bench-96c are counted with vector's.
	want := []Unmade{{Dir: "envs/bench-96c", Plans: 6, Why: "it has no name"}, {Dir: "entrants/vector", Plans: 9, Why: "it has no name"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("unmade plans: got %+v, want %+v", got, want)
	}
}

func TestEnvironmentProblemReportedOnce(t *testing.T) {
	fsys := realTree(t)
	src := string(fsys[benchFile].Data)
	start := strings.Index(src, "\t\tclickhouse: {")
	end := start + strings.Index(src[start:], "\n\t\t}\n") + len("\n\t\t}\n")
	if start < 0 || end < start {
		t.Fatal("fixture: no clickhouse block in " + benchFile)
	}
	src = src[:start] + src[end:]
	fsys[benchFile] = &fstest.MapFile{Data: []byte(src)}
	tr := loadTree(t, fsys)

	problems := tr.Broken()
	for _, id := range tr.Plans() {
		problems = append(problems, tr.Check(id.Env, id.Entrant, id.Variant)...)
	}
	problems = Dedupe(problems)
	want := fmt.Sprintf("%s:%d: C11: bench-96c: env.infra.clickhouse is missing", benchFile, lineOf(t, src, "infra: {"))
	if len(problems) != 1 || !strings.HasPrefix(problems[0].String(), want) {
		t.Fatalf("want exactly one problem starting %q; got:\n%s", want, joinProblems(problems))
	}
	if _, ps := tr.Resolve("bench-96c", "vector", ""); len(ps) != 1 || ps[0].String() != problems[0].String() {
		t.Fatalf("a plan of the broken environment must report its problem and nothing else; got:\n%s", joinProblems(ps))
	}
}

// TestSameProblemInSeveralPlansOnce: an unknown field in an entrant breaks
// each of its variants on each of its environments; it is one problem,
// at its line, naming every plan it breaks.
func TestSameProblemInSeveralPlansOnce(t *testing.T) {
	fsys := realTree(t)
	src := strings.Replace(string(fsys[vectorFile].Data), `role:   "data-plane"`, `role:   "data-plane"`+"\n\t\tthreads: 4", 1)
	fsys[vectorFile] = &fstest.MapFile{Data: []byte(src)}
	tr := loadTree(t, fsys)
	var problems []Problem
	for _, id := range tr.Plans() {
		problems = append(problems, tr.Check(id.Env, id.Entrant, id.Variant)...)
	}
	problems = Dedupe(problems)
	want := fmt.Sprintf(`%s:%d: C15: vector (default, json-each-row, small-batch) on bench-96c, c8g-8xl-ec2-docker, retired-32c: unknown field "threads"`, vectorFile, lineOf(t, src, "threads: 4"))
	if len(problems) != 1 || !strings.HasPrefix(problems[0].String(), want) {
		t.Fatalf("want one problem starting %q; got:\n%s", want, joinProblems(problems))
	}
}

// TestEnvironmentThatDoesNotEvaluate: a reference to nothing in an
// environment is reported at its line, once; the entrants that support
// the environment do not each report it as unknown.
func TestEnvironmentThatDoesNotEvaluate(t *testing.T) {
	fsys := realTree(t)
	src := strings.Replace(string(fsys[benchFile].Data), `password: "spatec"`, `password: passwd`, 1)
	fsys[benchFile] = &fstest.MapFile{Data: []byte(src)}
	problems := loadTree(t, fsys).Broken()
	want := fmt.Sprintf(`%s:%d: C11: envs/bench-96c: env.infra.clickhouse.password: reference "passwd" not found`, benchFile, lineOf(t, src, "password: passwd"))
	if len(problems) != 1 || problems[0].String() != want {
		t.Fatalf("want exactly %q; got:\n%s", want, joinProblems(problems))
	}
}

// TestFlinkGetsTheAlignmentItsHeapNeeds: a TaskManager declared at 31 GiB
// with 16-byte objects (above the default compressed-oops ceiling, under
// the one that alignment makes) passes vet, and the alignment reaches its
// JVM in the options Flink reads.
func TestFlinkGetsTheAlignmentItsHeapNeeds(t *testing.T) {
	fsys := realTree(t)
	src := strings.Replace(string(fsys[flinkFile].Data), "processSize: 21504 * MiB", "processSize: 34 * 1024 * MiB\n\t\t\tobjectAlignment: 16", 1)
	fsys[flinkFile] = &fstest.MapFile{Data: []byte(src)}
	p, problems := loadTree(t, fsys).Resolve("bench-96c", "flink", "")
	if len(problems) > 0 {
		t.Fatalf("problems:\n%s", joinProblems(problems))
	}
	tm := p.Entrant.Containers["tm"]
	if got := tm.JVM.Config["env.java.opts.taskmanager"]; !strings.Contains(got, "-XX:ObjectAlignmentInBytes=16") ||
		!strings.Contains(tm.Files[tm.JVM.ConfigFile], "env.java.opts.taskmanager: "+got) {
		t.Errorf("env.java.opts.taskmanager %q; want -XX:ObjectAlignmentInBytes=16 there, in the config.yaml Flink reads", got)
	}
}

// TestCopiedPackageKeepsItsClause: an environment copied to a new
// directory with its package clause left as it was is refused at that
// clause, once, with the clause to write; the official tool refuses the
// entrant's import of it. With the clause written, both pass.
func TestCopiedPackageKeepsItsClause(t *testing.T) {
	fsys := realTree(t)
	for name, f := range fsys {
		if rest, ok := strings.CutPrefix(name, "envs/local-containers/"); ok {
			fsys["envs/new-env/"+rest] = &fstest.MapFile{Data: []byte(strings.Replace(string(f.Data), `name:        "local-containers"`, `name:        "new-env"`, 1))}
		}
	}
	edit := func(file, old, new string) {
		src := string(fsys[file].Data)
		if strings.Count(src, old) != 1 {
			t.Fatalf("fixture: %q not once in %s", old, file)
		}
		fsys[file] = &fstest.MapFile{Data: []byte(strings.Replace(src, old, new, 1))}
	}
	edit(referenceFile, `supports: ["local", `, `supports: ["new-env", "local", `)
	edit("entrants/reference/plans.cue", "\tlocalcontainers \"", "\tnewenv \"spatec.dev/spatec/envs/new-env:newenv\"\n\tlocalcontainers \"")
	edit("entrants/reference/plans.cue", "\t\t\"local-containers\": localcontainers.env\n", "\t\t\"local-containers\": localcontainers.env\n\t\t\"new-env\":          newenv.env\n")

	got := vetAll(loadTree(t, fsys))
	src := string(fsys["envs/new-env/env.cue"].Data)
	want := fmt.Sprintf("envs/new-env/env.cue:%d: layout: envs/new-env is package localcontainers, as envs/local-containers is; a copied package keeps the package clause of its original: write `package newenv` in each of envs/new-env's files", lineOf(t, src, "package localcontainers"))
	if len(got) != 1 || !strings.HasPrefix(got[0].String(), want) {
		t.Fatalf("want one problem starting %q; got:\n%s", want, joinProblems(got))
	}
	for name, f := range fsys {
		if strings.HasPrefix(name, "envs/new-env/") {
			fsys[name] = &fstest.MapFile{Data: []byte(strings.Replace(string(f.Data), "package localcontainers", "package newenv", 1))}
		}
	}
	if got := vetAll(loadTree(t, fsys)); len(got) != 0 {
		t.Fatalf("the clause written, problems remain:\n%s", joinProblems(got))
	}
}

// TestCpusetsOfAnEnvironmentAlone: an environment's services' cpusets
// are checked with the environment, whether or not an entrant supports
// it (here none is left in the tree): beyond the host, and overlapping.
func TestCpusetsOfAnEnvironmentAlone(t *testing.T) {
	fsys := realTree(t)
	for name := range fsys {
		if strings.HasPrefix(name, "entrants/") {
			delete(fsys, name)
		}
	}
	src := string(fsys[localContainersFile].Data)
	for _, e := range [][2]string{
		{"\t\t\tcpus:   0.25\n\t\t\tmemory: 1 * GiB\n", "\t\t\tcpus:   0.25\n\t\t\tmemory: 1 * GiB\n\t\t\tcpuset: \"1\"\n"},
		{"\t\t\tcpus:   0.2\n\t\t\tmemory: 512 * MiB\n", "\t\t\tcpus:   0.2\n\t\t\tmemory: 512 * MiB\n\t\t\tcpuset: \"1-2\"\n"},
	} {
		if strings.Count(src, e[0]) != 1 {
			t.Fatalf("fixture: %q not once in %s", e[0], localContainersFile)
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	fsys[localContainersFile] = &fstest.MapFile{Data: []byte(src)}
	got := vetAll(loadTree(t, fsys))
	want := []string{
		fmt.Sprintf("%s:%d: C4: local-containers: service registry has cpuset 1-2, but the host has CPUs 0-1; pin it to CPUs the host has", localContainersFile, lineOf(t, src, `cpuset: "1-2"`)),
		fmt.Sprintf("%s:%d: C4: local-containers: service broker (cpuset 1) and service registry (cpuset 1-2) share CPUs 1; cpusets of one environment do not overlap", localContainersFile, lineOf(t, src, `cpuset: "1-2"`)),
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(p Problem) bool { return p.String() == w }) {
			t.Errorf("no problem %q; got:\n%s", w, joinProblems(got))
		}
	}
	if len(got) != len(want) {
		t.Errorf("want %d problems; got:\n%s", len(want), joinProblems(got))
	}
}
