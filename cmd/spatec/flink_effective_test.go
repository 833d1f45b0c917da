package main

// What Flink runs with, for each Flink plan: not the spellings of its
// config.yaml, but what Flink 2.2.1's own loader and memory utilities derive
// from the file, what its launch scripts hand the JVM, and what the JVM makes
// of that (entrants/flink/check).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// flinkReport is what entrants/flink/check prints for one process.
type flinkReport struct {
	Process string `json:"process"`
	// Refused is Flink's reason when it refuses the memory options; its
	// launcher stops there too.
	Refused            string           `json:"refused"`
	Memory             map[string]int64 `json:"memory"`
	FlinkJVMParameters string           `json:"flinkJvmParameters"`
	JVMArguments       []string         `json:"jvmArguments"`
	ParallelismDefault int              `json:"parallelismDefault"`
	NumberOfTaskSlots  int              `json:"numberOfTaskSlots"`
	JVM                struct {
		MaxHeapSize            int64  `json:"maxHeapSize"`
		HeapRegionSize         int64  `json:"heapRegionSize"`
		MaxDirectMemorySize    int64  `json:"maxDirectMemorySize"`
		MaxMetaspaceSize       int64  `json:"maxMetaspaceSize"`
		ObjectAlignmentInBytes int    `json:"objectAlignmentInBytes"`
		UseCompressedOops      bool   `json:"useCompressedOops"`
		CompressedOopsMode     string `json:"compressedOopsMode"`
		GC                     string `json:"gc"`
		ActiveProcessors       int    `json:"activeProcessors"`
		Version                string `json:"version"`
	} `json:"jvm"`
}

// flinkChecker builds entrants/flink/check, or takes it from the cache image
// builds use (exec/compile keeps the jar by the digest of its sources, so a
// warm run compiles nothing), and returns the jar.
func flinkChecker(t *testing.T) string {
	t.Helper()
	testenv.Require(t, "a JDK and Maven (java, javac, mvn, bash)", func() error {
		for _, tool := range []string{"java", "javac", "mvn", "bash"} {
			if _, err := osexec.LookPath(tool); err != nil {
				return err
			}
		}
		return nil
	})
	root := findCheckout()
	if root == "" {
		t.Fatal("the test runs outside a spatec checkout")
	}
	cache := defaultCache()
	if cache == "" {
		cache = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tree := &compile.Tree{Dir: root, CacheDir: filepath.Join(cache, "compile")}
	out, err := tree.Build(ctx, schema.Compile{Maven: &schema.Maven{Project: "entrants/flink/check", Jar: "spatec-flink-check.jar"}})
	if err != nil {
		t.Fatalf("building the Flink checker: %v", err)
	}
	return out.Path
}

// checkFlink runs the checker on a config.yaml for a Flink process
// ("taskmanager" or "jobmanager") in a container of cpus CPUs.
func checkFlink(t *testing.T, jar, configYAML, process string, cpus float64) flinkReport {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(configYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "java", "-jar", jar, dir, process, "--cpus", strconv.FormatFloat(cpus, 'f', -1, 64))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *osexec.ExitError
	// 3: Flink refused the memory options, and says why in the report.
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) {
		t.Fatalf("checking %s's config.yaml: %v\n%s%s", process, err, stdout.String(), stderr.String())
	}
	var r flinkReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("the checker's report on %s: %v\n%s%s", process, err, stdout.String(), stderr.String())
	}
	if (err == nil) != (r.Refused == "") {
		t.Fatalf("the checker exited %v with refused %q", err, r.Refused)
	}
	return r
}

// launchScripts are the scripts whose argument order the checker models,
// by the Flink process they start.
var launchScripts = map[string][]string{
	"taskmanager": {"/opt/flink/bin/taskmanager.sh"},
	"jobmanager":  {"/opt/flink/bin/standalone-job.sh", "/opt/flink/bin/jobmanager.sh"},
}

// launcherEnvironment are variables that would reach the JVM beside the
// config.yaml: Flink's scripts read the file's options only when
// FLINK_ENV_JAVA_OPTS is unset, and the JVM reads the others itself.
var launcherEnvironment = []string{
	"FLINK_ENV_JAVA_OPTS", "FLINK_ENV_JAVA_OPTS_TM", "FLINK_ENV_JAVA_OPTS_JM", "JVM_ARGS",
	"FLINK_CONF_DIR", "FLINK_PROPERTIES", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS",
}

// TestFlinkRunsWhatThePlanSays: for every Flink process of every Flink plan,
// Flink derives from the plan's config.yaml exactly the declared heap and
// non-heap split, its launcher hands the JVM arguments under which the JVM's
// maximum heap is the declared heap, with the declared alignment and the
// compressed oops it implies, and the job runs one subtask per partition.
// Then three config.yaml shapes that read right to a check of flat keys,
// and that Flink runs otherwise.
func TestFlinkRunsWhatThePlanSays(t *testing.T) {
	jar := flinkChecker(t)
	var sample *schema.Plan
	for _, d := range planAll(t) {
		p := d.Plan
		for name, c := range p.Entrant.Containers {
			if c.JVM == nil || c.JVM.Flink == "" {
				continue
			}
			if sample == nil && p.Env.Class == "authoritative" {
				sample = &p
			}
			t.Run(p.Env.Name+"/"+p.Entrant.Name+":"+p.Variant+"/"+name, func(t *testing.T) {
				j := c.JVM
				if len(c.Entrypoint) == 0 || !slices.Contains(launchScripts[j.Flink], c.Entrypoint[0]) {
					t.Fatalf("entrypoint %q: the checker models %v for Flink's %s", c.Entrypoint, launchScripts[j.Flink], j.Flink)
				}
				for _, k := range launcherEnvironment {
					if v, ok := c.Environment[k]; ok {
						t.Errorf("environment sets %s=%q, which reaches the JVM beside %s", k, v, j.ConfigFile)
					}
				}
				r := checkFlink(t, jar, c.Files[j.ConfigFile], j.Flink, c.CPUs)
				if r.Refused != "" {
					t.Fatalf("Flink refuses %s: %s", j.ConfigFile, r.Refused)
				}
				// The JVM that decides is the image's.
				if want := imageJDK(t, c); !strings.HasPrefix(r.JVM.Version, want+".") {
					t.Fatalf("the java on PATH is %s; the image runs OpenJDK %s, whose decisions these are", r.JVM.Version, want)
				}
				m := r.Memory
				t.Logf("Flink %s: heap %s, %s; process %s in a container of %s; JVM: max heap %s, direct %s, metaspace %s, alignment %d, compressed oops %s, %s GC on %d CPUs; parallelism %d, slots %d",
					j.Flink, mib(m["jvmHeap"]), components(m), mib(m["totalProcess"]), mib(c.Memory),
					mib(r.JVM.MaxHeapSize), mib(r.JVM.MaxDirectMemorySize), mib(r.JVM.MaxMetaspaceSize), r.JVM.ObjectAlignmentInBytes,
					r.JVM.CompressedOopsMode, r.JVM.GC, r.JVM.ActiveProcessors, r.ParallelismDefault, r.NumberOfTaskSlots)

				// The heap: Flink's, and the JVM's after every option.
				// HotSpot rounds a heap up to its alignment: the reach of a
				// page of its card table (512-byte cards on 4 KiB pages,
				// 2 MiB), or G1's region when that is larger.
				align := max(int64(2<<20), r.JVM.HeapRegionSize)
				jvmHeap := (j.Heap + align - 1) / align * align
				if m["jvmHeap"] != j.Heap || r.JVM.MaxHeapSize != jvmHeap {
					t.Errorf("heap: Flink derives %d, the JVM runs with %d; the plan declares %d (%d at the JVM's alignment of %d)", m["jvmHeap"], r.JVM.MaxHeapSize, j.Heap, jvmHeap, align)
				}
				// The rest of the process: the declared non-heap allowance,
				// within the container.
				if m["totalProcess"] != j.Heap+j.NonHeap || m["totalProcess"] > c.Memory {
					t.Errorf("process: Flink derives %d; the plan declares heap %d + non-heap %d = %d in a container of %d",
						m["totalProcess"], j.Heap, j.NonHeap, j.Heap+j.NonHeap, c.Memory)
				}
				// Each component as #FlinkMemory derived it (jvm.config).
				size := func(k string) int64 {
					v, ok := j.Config[k]
					if !ok {
						t.Fatalf("jvm.config has no %s: %v", k, j.Config)
					}
					return flinkSize(t, v)
				}
				var want map[string]int64
				if j.Flink == "taskmanager" {
					want = map[string]int64{
						"frameworkHeap":    size("taskmanager.memory.framework.heap.size"),
						"taskHeap":         size("taskmanager.memory.task.heap.size"),
						"managed":          0,
						"frameworkOffHeap": size("taskmanager.memory.framework.off-heap.size"),
						"taskOffHeap":      size("taskmanager.memory.task.off-heap.size"),
						"network":          size("taskmanager.memory.network.max"),
						"metaspace":        size("taskmanager.memory.jvm-metaspace.size"),
						"overhead":         size("taskmanager.memory.jvm-overhead.max"),
					}
					// The network buffers are direct memory: the JVM caps it
					// at Flink's sum.
					if r.JVM.MaxDirectMemorySize != m["jvmDirect"] {
						t.Errorf("the JVM's MaxDirectMemorySize is %d; Flink derives %d", r.JVM.MaxDirectMemorySize, m["jvmDirect"])
					}
				} else {
					want = map[string]int64{
						"offHeap":   size("jobmanager.memory.off-heap.size"),
						"metaspace": size("jobmanager.memory.jvm-metaspace.size"),
						"overhead":  size("jobmanager.memory.jvm-overhead.max"),
					}
				}
				for k, v := range want {
					if m[k] != v {
						t.Errorf("%s: Flink derives %d; jvm.config makes it %d", k, m[k], v)
					}
				}
				if r.JVM.MaxMetaspaceSize != m["metaspace"] {
					t.Errorf("the JVM's MaxMetaspaceSize is %d; Flink derives %d", r.JVM.MaxMetaspaceSize, m["metaspace"])
				}

				// The object layout C9's ceiling reasons with.
				if r.JVM.ObjectAlignmentInBytes != j.ObjectAlignment {
					t.Errorf("ObjectAlignmentInBytes %d; the plan declares %d", r.JVM.ObjectAlignmentInBytes, j.ObjectAlignment)
				}
				// The mode the plan declares for its heap, which the
				// executor holds the JVM to after a run.
				mode := j.CompressedOopsMode()
				if mode == "" {
					t.Fatalf("the plan declares no compressed-oops mode for a %d-byte heap at alignment %d from %d (ceiling %d)", j.Heap, j.ObjectAlignment, j.HeapBaseMinAddress, j.Ceiling)
				}
				if r.JVM.UseCompressedOops != (mode != "Disabled") || r.JVM.CompressedOopsMode != mode {
					t.Errorf("compressed oops %v (%s); a %d-byte heap at alignment %d from %d takes them %s",
						r.JVM.UseCompressedOops, r.JVM.CompressedOopsMode, j.Heap, j.ObjectAlignment, j.HeapBaseMinAddress, mode)
				}
				// The collector: the JVM's own choice depends on the CPUs
				// it sees, so the plan names it (jvmOptions).
				if r.JVM.GC != j.GC {
					t.Errorf("the JVM runs the %s collector on %d CPUs; the plan declares %s", r.JVM.GC, r.JVM.ActiveProcessors, j.GC)
				}

				// C10, as Flink reads it.
				if r.ParallelismDefault != p.Env.Partitions || r.NumberOfTaskSlots != p.Env.Partitions {
					t.Errorf("parallelism.default %d, taskmanager.numberOfTaskSlots %d; %s has %d partitions",
						r.ParallelismDefault, r.NumberOfTaskSlots, p.Env.Name, p.Env.Partitions)
				}
			})
		}
	}
	if sample == nil {
		t.Fatal("no authoritative Flink plan")
	}

	// Three shapes of a TaskManager's config.yaml that hold every key
	// jvm.config makes, each with its value, and run something else.
	tm := sample.Entrant.Containers["tm"]
	if tm.JVM == nil || tm.JVM.Flink != "taskmanager" {
		t.Fatalf("%s: no TaskManager container tm", sample.Env.Name)
	}
	conf := tm.Files[tm.JVM.ConfigFile]
	t.Run("a later -Xmx in env.java.opts.all", func(t *testing.T) {
		shaped := appendToLine(t, conf, "env.java.opts.all:", " -Xmx40g")
		r := checkFlink(t, jar, shaped, "taskmanager", tm.CPUs)
		// Flink computes the declared heap and puts it first; the JVM
		// takes the last.
		if r.Memory["jvmHeap"] != tm.JVM.Heap {
			t.Errorf("Flink's heap %d; declared %d", r.Memory["jvmHeap"], tm.JVM.Heap)
		}
		if r.JVM.MaxHeapSize != 40<<30 || r.JVM.UseCompressedOops {
			t.Errorf("the JVM runs a heap of %d with compressed oops %v; want the 40 GiB the option gives, past compressed oops", r.JVM.MaxHeapSize, r.JVM.UseCompressedOops)
		}
	})
	t.Run("nested taskmanager.memory.process.size beside the flat keys", func(t *testing.T) {
		size := (tm.JVM.Heap + tm.JVM.NonHeap + 2<<30) >> 20
		shaped := conf + fmt.Sprintf("taskmanager:\n  memory:\n    process:\n      size: %dm\n", size)
		r := checkFlink(t, jar, shaped, "taskmanager", tm.CPUs)
		// The nested key is the flat one to Flink, and a process size the
		// fixed components do not sum to leaves the overhead out of its
		// range: the TaskManager does not start.
		if !strings.Contains(r.Refused, "JVM Overhead") {
			t.Errorf("Flink takes a %d MiB process beside components of %d: refused %q, memory %v", size, (tm.JVM.Heap+tm.JVM.NonHeap)>>20, r.Refused, r.Memory)
		}
	})
	t.Run("nested taskmanager.memory.task.heap.size beside the flat keys", func(t *testing.T) {
		shaped := conf + "taskmanager:\n  memory:\n    task:\n      heap:\n        size: 8192m\n"
		r := checkFlink(t, jar, shaped, "taskmanager", tm.CPUs)
		// The later key wins: the heap and the process grow.
		want := 8192<<20 + r.Memory["frameworkHeap"]
		if r.Refused != "" || r.Memory["jvmHeap"] != want || r.JVM.MaxHeapSize != want || r.Memory["totalProcess"] == tm.JVM.Heap+tm.JVM.NonHeap {
			t.Errorf("refused %q, Flink's heap %d, the JVM's %d, process %d; want a heap of %d", r.Refused, r.Memory["jvmHeap"], r.JVM.MaxHeapSize, r.Memory["totalProcess"], want)
		}
	})
	t.Run("parallelism.default written as a number", func(t *testing.T) {
		other := sample.Env.Partitions/2 + 1
		shaped := replaceLine(t, conf, "parallelism.default:", fmt.Sprintf("parallelism.default: %d", other))
		r := checkFlink(t, jar, shaped, "taskmanager", tm.CPUs)
		if r.ParallelismDefault != other || r.NumberOfTaskSlots != sample.Env.Partitions {
			t.Errorf("parallelism.default %d, slots %d; want %d written, %d slots", r.ParallelismDefault, r.NumberOfTaskSlots, other, sample.Env.Partitions)
		}
	})
}

// imageJDK is the major version of the OpenJDK c's Debian image installs.
func imageJDK(t *testing.T, c schema.Container) string {
	t.Helper()
	if c.Build != nil && c.Build.Debian != nil {
		for _, p := range c.Build.Debian.Packages {
			if v, ok := strings.CutPrefix(p, "openjdk-"); ok {
				if major, _, ok := strings.Cut(v, "-"); ok {
					return major
				}
			}
		}
	}
	t.Fatalf("image %s installs no Debian openjdk package", c.Image)
	return ""
}

// appendToLine appends suffix to the one line of text that starts with
// prefix.
func appendToLine(t *testing.T, text, prefix, suffix string) string {
	t.Helper()
	return editLine(t, text, prefix, func(l string) string { return l + suffix })
}

// replaceLine replaces the one line of text that starts with prefix.
func replaceLine(t *testing.T, text, prefix, with string) string {
	t.Helper()
	return editLine(t, text, prefix, func(string) string { return with })
}

func editLine(t *testing.T, text, prefix string, edit func(string) string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = edit(l)
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d lines start with %q", n, prefix)
	}
	return strings.Join(lines, "\n")
}

// mib writes a byte count in MiB.
func mib(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%dm", b>>20)
	}
	return fmt.Sprintf("%.3fm", float64(b)/(1<<20))
}

// components lists the components of a report's memory.
func components(m map[string]int64) string {
	var parts []string
	for _, k := range []string{"frameworkHeap", "taskHeap", "managed", "frameworkOffHeap", "taskOffHeap", "offHeap", "network", "metaspace", "overhead"} {
		if v, ok := m[k]; ok {
			parts = append(parts, k+" "+mib(v))
		}
	}
	return strings.Join(parts, ", ")
}
