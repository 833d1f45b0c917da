package options

import "regexp"

// Ownership lists, for each options directory, the options that set what
// the contract owns: a JVM's heap and what sizes it (C9), and the
// parallelism (C10). Each is written by the contract's binding alone; the
// CUE refuses an author's value with Bind, what to write instead. A rule
// matches a key by its whole name.
func Ownership(dir string) []Owned {
	rule := func(pattern, owns, bind string) Owned {
		return Owned{Key: regexp.MustCompile("^(?:" + pattern + ")$"), Owns: owns, Bind: bind}
	}
	const (
		heap        = "the container's jvm block sizes the heap (jvm.heap and jvm.floor, or a Flink process's jvm.processSize), and spatec writes what the JVM reads"
		flinkMemory = "the container's jvm block: spatec writes every memory option Flink would derive from jvm.processSize (schema #FlinkMemory)"
		parallelism = "the entrant's parallelism knob (the knob with parallelism: true) sets it, and the binding writes it"
	)
	switch dir {
	case "flink":
		return []Owned{
			rule(`(taskmanager|jobmanager)\.memory\..+|(taskmanager|jobmanager)\.heap\..+|env\.java\.opts\.(taskmanager|jobmanager)`, "C9", flinkMemory),
			rule(`parallelism\.default|taskmanager\.numberOfTaskSlots|table\.exec\.resource\.default-parallelism`, "C10", parallelism),
		}
	case "connect":
		return []Owned{rule(`tasks\.max`, "C10", parallelism)}
	case "clickhouse":
		return []Owned{rule(`kafka_num_consumers`, "C10", parallelism)}
	case "reference":
		return []Owned{rule(`SPATEC_CONSUMERS`, "C10", parallelism)}
	case "spate":
		return []Owned{rule(`threads|SPATE_THREADS|SPATEC_THREADS`, "C10", parallelism)}
	case "jvm":
		// What sizes the heap, by the JDK's own names: the -X options
		// `java -X` says set a heap size, and the -XX flags of
		// `java -XX:+PrintFlagsFinal` that size the heap, bound its share
		// of the machine, or set the compressed-oops arithmetic C9 checks.
		return []Owned{rule(`-Xm[nsx]|-XX:((Max|Min|Initial|SoftMax)HeapSize|ErgoHeapSizeLimit|MaxRAM|(Max|Min|Initial)RAM(Percentage|Fraction)|(Max)?NewSize|OldSize|HeapBaseMinAddress|ObjectAlignmentInBytes|UseCompressedOops)`, "C9", heap)}
	}
	return nil
}
