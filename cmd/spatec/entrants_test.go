package main

// What each bench system reads, as its plans resolve it on every
// authoritative environment, checked against what that system requires.
// These systems' images cannot be pulled here, so this is where their
// configuration is tested; on the bench host `spatec exec --hold` runs it.

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"spatec.dev/spatec/schema"
)

// authoritativePlans returns entrant's default plan on every authoritative
// environment it supports.
func authoritativePlans(t *testing.T, entrant string) []schema.Plan {
	t.Helper()
	var out []schema.Plan
	for _, d := range planAll(t) {
		if d.Plan.Entrant.Name == entrant && d.Plan.Env.Class == "authoritative" && d.Plan.Variant == "default" {
			out = append(out, d.Plan)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no authoritative plan of %s", entrant)
	}
	return out
}

// properties reads a Java properties file (key=value lines).
func properties(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("properties line %q has no '='", line)
		}
		out[k] = v
	}
	return out
}

// expect reports every key of want whose value in got differs.
func expect(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func TestKafkaConnectReadsWhatItNeeds(t *testing.T) {
	for _, p := range authoritativePlans(t, "kafka-connect") {
		t.Run(p.Env.Name, func(t *testing.T) {
			c := p.Entrant.Containers["worker"]
			// connect-standalone takes the worker's file, then the
			// connector's.
			if want := []string{"/opt/kafka/bin/connect-standalone.sh", "/opt/spatec/worker.properties", "/opt/spatec/clickhouse-sink.properties"}; !slices.Equal(c.Entrypoint, want) {
				t.Errorf("entrypoint %q, want %q", c.Entrypoint, want)
			}
			worker := properties(t, c.Files["/opt/spatec/worker.properties"])
			// What a standalone worker refuses to start without.
			for _, k := range []string{"bootstrap.servers", "key.converter", "value.converter", "offset.storage.file.filename", "plugin.path"} {
				if worker[k] == "" {
					t.Errorf("worker.properties lacks %s", k)
				}
			}
			expect(t, "worker.properties", worker, map[string]string{
				"bootstrap.servers":          p.Env.Endpoints.Brokers,
				"consumer.auto.offset.reset": "earliest",
				"plugin.path":                "/opt/kafka/plugins",
			})
			sink := properties(t, c.Files["/opt/spatec/clickhouse-sink.properties"])
			host, port, _ := strings.Cut(p.Env.Infra.ClickHouse.HTTPAddr, ":")
			expect(t, "clickhouse-sink.properties", sink, map[string]string{
				"connector.class": "com.clickhouse.kafka.connect.ClickHouseSinkConnector",
				// C10: the parallelism reaches the connector's tasks.
				"tasks.max":      strconv.Itoa(p.Env.Partitions),
				"topics":         p.Workload.Topic,
				"topic2TableMap": p.Workload.Topic + "=" + p.Workload.Table.Name,
				"hostname":       host,
				"port":           port,
				"username":       p.Env.Endpoints.ClickHouseUser,
				"password":       p.Env.Endpoints.ClickHousePassword,
				"database":       p.Env.Endpoints.Database,
			})
			if sink["name"] == "" {
				t.Error("the connector has no name")
			}
			// The batch knob binds: the consumer hands a task as many
			// records as the connector buffers.
			if sink["bufferCount"] != worker["consumer.max.poll.records"] {
				t.Errorf("bufferCount %s but max.poll.records %s", sink["bufferCount"], worker["consumer.max.poll.records"])
			}
			// The connector is on the plugin path, at a pinned checksum.
			b := c.Build
			if b == nil || b.Layered == nil || len(b.Layered.Downloads) != 1 ||
				!strings.HasPrefix(b.Layered.Downloads[0].To, worker["plugin.path"]+"/") || len(b.Layered.Downloads[0].SHA256) != 64 {
				t.Errorf("build %+v; want the connector's release added under %s, checked by its sha256", b, worker["plugin.path"])
			}
			// C9: Kafka's launcher reads the heap from KAFKA_HEAP_OPTS.
			if c.JVM == nil || c.JVM.OptionsVia != "KAFKA_HEAP_OPTS" || c.Environment["KAFKA_HEAP_OPTS"] != "" {
				t.Errorf("jvm %+v, environment %v; want the declared heap handed over in KAFKA_HEAP_OPTS", c.JVM, c.Environment)
			}
		})
	}
}

func TestVectorReadsWhatItNeeds(t *testing.T) {
	for _, p := range authoritativePlans(t, "vector") {
		t.Run(p.Env.Name, func(t *testing.T) {
			c := p.Entrant.Containers["vector"]
			var cfg struct {
				Sources    map[string]map[string]any `yaml:"sources"`
				Transforms map[string]struct {
					Type   string   `yaml:"type"`
					Inputs []string `yaml:"inputs"`
					Source string   `yaml:"source"`
				} `yaml:"transforms"`
				Sinks map[string]struct {
					Type     string            `yaml:"type"`
					Inputs   []string          `yaml:"inputs"`
					Endpoint string            `yaml:"endpoint"`
					Database string            `yaml:"database"`
					Table    string            `yaml:"table"`
					Auth     map[string]string `yaml:"auth"`
					Batch    struct {
						MaxEvents int `yaml:"max_events"`
						MaxBytes  int `yaml:"max_bytes"`
					} `yaml:"batch"`
					Buffer struct {
						MaxEvents int `yaml:"max_events"`
					} `yaml:"buffer"`
				} `yaml:"sinks"`
			}
			if !slices.Contains(c.Args, "/etc/vector/spatec.yaml") {
				t.Fatalf("args %q do not name the config file", c.Args)
			}
			if err := yaml.Unmarshal([]byte(c.Files["/etc/vector/spatec.yaml"]), &cfg); err != nil {
				t.Fatal(err)
			}
			// C10: one consumer per partition, all in one group.
			if len(cfg.Sources) != p.Env.Partitions {
				t.Errorf("%d kafka sources for %d partitions", len(cfg.Sources), p.Env.Partitions)
			}
			groups := map[any]bool{}
			for name, s := range cfg.Sources {
				groups[s["group_id"]] = true
				if s["type"] != "kafka" || s["bootstrap_servers"] != p.Env.Endpoints.Brokers {
					t.Errorf("source %s: %v", name, s)
				}
			}
			if len(groups) != 1 {
				t.Errorf("the sources are in %d groups; one group shares the partitions among them", len(groups))
			}
			// Each source's events are shaped to exactly the table's columns.
			columns := p.Workload.Table.Columns
			var shaped []string
			for name, tr := range cfg.Transforms {
				shaped = append(shaped, name)
				for _, col := range columns {
					if !strings.Contains(tr.Source, fmt.Sprintf("%q: .%s", col, col)) {
						t.Errorf("transform %s does not keep column %s: %s", name, col, tr.Source)
					}
				}
				if strings.Count(tr.Source, ": .") != len(columns) {
					t.Errorf("transform %s keeps other fields than the table's columns: %s", name, tr.Source)
				}
			}
			sink := cfg.Sinks["clickhouse"]
			slices.Sort(shaped)
			slices.Sort(sink.Inputs)
			if !slices.Equal(shaped, sink.Inputs) || len(shaped) != p.Env.Partitions {
				t.Errorf("the sink reads %v; want every shaped source %v", sink.Inputs, shaped)
			}
			if sink.Type != "clickhouse" || sink.Endpoint != p.Env.Endpoints.ClickHouseHTTP || sink.Database != p.Env.Endpoints.Database || sink.Table != p.Workload.Table.Name {
				t.Errorf("sink %+v", sink)
			}
			expect(t, "sink auth", sink.Auth, map[string]string{"strategy": "basic", "user": p.Env.Endpoints.ClickHouseUser, "password": p.Env.Endpoints.ClickHousePassword})
			// The event count binds, not the byte count, and the buffer
			// can fill a batch.
			if sink.Batch.MaxEvents*p.Workload.Generator.MessageBytes > sink.Batch.MaxBytes || sink.Buffer.MaxEvents <= sink.Batch.MaxEvents {
				t.Errorf("batch %+v, buffer %+v at %d-byte messages", sink.Batch, sink.Buffer, p.Workload.Generator.MessageBytes)
			}
			if want := strconv.Itoa(int(math.Ceil(p.Env.Envelope.CPUs))); c.Environment["VECTOR_THREADS"] != want {
				t.Errorf("VECTOR_THREADS %q, want one thread per envelope CPU, %s", c.Environment["VECTOR_THREADS"], want)
			}
		})
	}
}

func TestKafkaEngineReadsWhatItNeeds(t *testing.T) {
	for _, d := range planAll(t) {
		p := d.Plan
		if p.Entrant.Name != "clickhouse-kafka-engine" {
			continue
		}
		t.Run(p.Env.Name, func(t *testing.T) {
			c := p.Entrant.Containers["engine"]
			var setup string
			for name, body := range c.Files {
				if strings.HasSuffix(name, ".sql") {
					setup = body
				}
			}
			for _, want := range []string{
				"ENGINE = Kafka SETTINGS",
				fmt.Sprintf("kafka_num_consumers = %d", p.Env.Partitions), // C10
				"kafka_broker_list = '" + p.Env.Endpoints.Brokers + "'",
				"ENGINE = Distributed(spatec_sink, " + p.Env.Endpoints.Database + ", " + p.Workload.Table.Name + ")",
				"CREATE MATERIALIZED VIEW spatec_view TO spatec_forward",
			} {
				if !strings.Contains(setup, want) {
					t.Errorf("setup SQL lacks %q:\n%s", want, setup)
				}
			}
			if per := strings.Contains(setup, "kafka_thread_per_consumer = 1"); per != (p.Env.Class == "authoritative") {
				t.Errorf("kafka_thread_per_consumer set %v on %s; 24.8 needs it, 18.16 does not know it", per, p.Env.Name)
			}
			cluster := c.Files["/etc/clickhouse-server/config.d/spatec-kafka.xml"]
			host, port, _ := strings.Cut(p.Env.Endpoints.ClickHouse, ":")
			for _, want := range []string{"<host>" + host + "</host>", "<port>" + port + "</port>",
				"<user>" + p.Env.Endpoints.ClickHouseUser + "</user>", "<password>" + p.Env.Endpoints.ClickHousePassword + "</password>",
				"<auto_offset_reset>earliest</auto_offset_reset>"} {
				if !strings.Contains(cluster, want) {
					t.Errorf("config.d lacks %s:\n%s", want, cluster)
				}
			}
			if !strings.Contains(c.Files["/etc/clickhouse-server/users.d/spatec-forward.xml"], "<insert_distributed_sync>1</insert_distributed_sync>") {
				t.Error("the view's inserts do not wait for the sink")
			}
		})
	}
}

// flinkSize reads a Flink memory size as spatec writes it ("4096m", "0").
func flinkSize(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(s, "m"), 10, 64)
	if err != nil {
		t.Fatalf("memory size %q: %v", s, err)
	}
	if strings.HasSuffix(s, "m") {
		n <<= 20
	}
	return n
}

// TestFlinkReadsWhatItNeeds: each Flink process gets its declared heap as
// the memory options Flink's launcher turns into -Xms/-Xmx, every
// component fixed so that the process is exactly heap + non-heap, after
// the reference's configuration lines; and the arm is refused, with its
// reason, while its job cannot be built.
func TestFlinkReadsWhatItNeeds(t *testing.T) {
	for _, p := range authoritativePlans(t, "flink") {
		t.Run(p.Env.Name, func(t *testing.T) {
			for name, want := range map[string]string{"jm": "jobmanager", "tm": "taskmanager"} {
				c := p.Entrant.Containers[name]
				if c.JVM.Flink != want || c.JVM.OptionsVia != "FLINK_PROPERTIES" || c.JVM.OptionsJoin != "\n" {
					t.Fatalf("%s: %+v; want Flink's %s memory options in FLINK_PROPERTIES", name, c.JVM, want)
				}
				conf := map[string]string{}
				for _, line := range strings.Split(c.Environment["FLINK_PROPERTIES"]+"\n"+strings.Join(c.JVM.Options, "\n"), "\n") {
					if k, v, ok := strings.Cut(line, ": "); ok {
						if _, dup := conf[k]; dup {
							t.Errorf("%s: %s is set twice", name, k)
						}
						conf[k] = v
					}
				}
				expect(t, name, conf, map[string]string{
					"jobmanager.rpc.address":                            "jm",
					"parallelism.default":                               strconv.Itoa(p.Env.Partitions),
					"taskmanager.numberOfTaskSlots":                     strconv.Itoa(p.Env.Partitions),
					"execution.checkpointing.mode":                      "AT_LEAST_ONCE",
					"execution.checkpointing.interval":                  "5s",
					"state.backend.type":                                "hashmap",
					"execution.buffer-timeout.enabled":                  "false",
					"pipeline.operator-chaining.enabled":                "true",
					"execution.checkpointing.storage":                   "filesystem",
					"pipeline.object-reuse":                             "true",
					"taskmanager.network.memory.buffer-debloat.enabled": "false",
				})
				size := func(k string) int64 {
					v, ok := conf[k]
					if !ok {
						t.Fatalf("%s: %s is not set", name, k)
					}
					return flinkSize(t, v)
				}
				// Flink's memory model: -Xmx = -Xms is the framework and
				// task heap (TaskManager) or the heap (JobManager); the
				// process is the sum of every component.
				var heap, process int64
				if want == "taskmanager" {
					heap = size("taskmanager.memory.framework.heap.size") + size("taskmanager.memory.task.heap.size")
					if size("taskmanager.memory.network.min") != size("taskmanager.memory.network.max") ||
						size("taskmanager.memory.jvm-overhead.min") != size("taskmanager.memory.jvm-overhead.max") ||
						size("taskmanager.memory.managed.size") != 0 {
						t.Errorf("%s: a component is left to a fraction: %v", name, c.JVM.Options)
					}
					process = heap + size("taskmanager.memory.managed.size") + size("taskmanager.memory.framework.off-heap.size") +
						size("taskmanager.memory.task.off-heap.size") + size("taskmanager.memory.network.max") +
						size("taskmanager.memory.jvm-metaspace.size") + size("taskmanager.memory.jvm-overhead.max")
				} else {
					heap = size("jobmanager.memory.heap.size")
					if size("jobmanager.memory.jvm-overhead.min") != size("jobmanager.memory.jvm-overhead.max") {
						t.Errorf("%s: the overhead is left to a fraction: %v", name, c.JVM.Options)
					}
					process = heap + size("jobmanager.memory.off-heap.size") + size("jobmanager.memory.jvm-metaspace.size") + size("jobmanager.memory.jvm-overhead.max")
				}
				if heap != c.JVM.Heap || process != c.JVM.Heap+c.JVM.NonHeap || process > c.Memory {
					t.Errorf("%s: heap %d (declared %d), process %d (declared heap + non-heap %d, container %d)",
						name, heap, c.JVM.Heap, process, c.JVM.Heap+c.JVM.NonHeap, c.Memory)
				}
			}
		})
	}
	code, _, errOut := cli(t, "exec", "--env", "bench-96c", "flink", "--results", t.TempDir())
	if code != exitRefused || !strings.HasPrefix(errOut, "REFUSED: flink cannot run yet: no job is built or submitted") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}
