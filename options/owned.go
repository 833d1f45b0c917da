package options

import "regexp"

// LayoutOf is what options/<dir>'s package holds beside one closed
// definition per registry: the options that set what the contract owns,
// whether the system reads an enum in any case, and the configurations
// made of several registries.
//
// Owned options set a JVM's heap or what sizes it (C9), or the
// parallelism (C10). Each is written by the contract's binding alone; the
// CUE refuses an author's value with Bind, what to write instead. A rule
// matches a key by its whole name.
func LayoutOf(dir string) Layout {
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
		return Layout{FoldEnums: true, Flat: true, JVMOptions: regexp.MustCompile(`^env\.java\.(default-)?opts(\..+)?$`), Owned: []Owned{
			rule(`(taskmanager|jobmanager)\.memory\..+|(taskmanager|jobmanager)\.heap\..+|env\.java\.opts\.(taskmanager|jobmanager)`, "C9", flinkMemory),
			rule(`parallelism\.default|taskmanager\.numberOfTaskSlots|table\.exec\.resource\.default-parallelism`, "C10", parallelism),
		}}
	case "connect":
		const plugin = "ClickHouse's sink connector 1.4.0 reads it; the connector's definition is in its release's jar, which only GitHub serves, and GitHub cannot be reached here, so no registry of its keys can be read"
		const avro = "Confluent's Avro converter reads it; the converter comes from Confluent's Maven repository, which cannot be reached here, so no registry of its keys can be read"
		converters := []Part{{"key.converter.", "jsonConverter"}, {"value.converter.", "jsonConverter"}}
		return Layout{FoldEnums: true, Owned: []Owned{rule(`tasks\.max`, "C10", parallelism)}, Composites: []Composite{{
			Name:         "WorkerProperties",
			In:           "Kafka Connect 4.3.1's worker properties",
			Parts:        append([]Part{{"", "worker"}, {"consumer.", "consumer"}, {"producer.", "producer"}, {"admin.", "admin"}}, converters...),
			Unregistered: map[string]string{"value.converter.schema.registry.url": avro},
		}, {
			Name:  "SinkProperties",
			In:    "Kafka Connect 4.3.1's sink connector properties",
			Parts: append([]Part{{"", "connector"}, {"consumer.override.", "consumer"}, {"producer.override.", "producer"}, {"admin.override.", "admin"}}, converters...),
			Unregistered: map[string]string{
				"value.converter.schema.registry.url": avro,
				"hostname":                            plugin, "port": plugin, "ssl": plugin, "username": plugin, "password": plugin, "database": plugin,
				"exactlyOnce": plugin, "bufferCount": plugin, "bufferFlushTime": plugin, "ignorePartitionsWhenBatching": plugin, "topic2TableMap": plugin,
			},
		}}}
	case "clickhouse":
		return Layout{Owned: []Owned{rule(`kafka_num_consumers`, "C10", parallelism)}}
	case "reference":
		return Layout{Owned: []Owned{rule(`SPATEC_CONSUMERS`, "C10", parallelism)}}
	case "spate":
		return Layout{Owned: []Owned{rule(`threads|SPATE_THREADS|SPATEC_THREADS`, "C10", parallelism)}}
	case "jvm":
		// What sizes the heap, by the JDK's own names: the -X options
		// `java -X` says set a heap size, and the -XX flags of
		// `java -XX:+PrintFlagsFinal` that size the heap, bound its share
		// of the machine, or set the compressed-oops arithmetic C9 checks.
		return Layout{Owned: []Owned{rule(`-Xm[nsx]|-XX:((Max|Min|Initial|SoftMax)HeapSize|ErgoHeapSizeLimit|MaxRAM|(Max|Min|Initial)RAM(Percentage|Fraction)|(Max)?NewSize|OldSize|HeapBaseMinAddress|ObjectAlignmentInBytes|UseCompressedOops)`, "C9", heap)}}
	}
	return Layout{}
}
