package main

// What each bench system reads, as its plans resolve it on every
// authoritative environment, checked against what that system requires.
// These systems' images cannot be pulled here, so this is where their
// configuration is tested; on the bench host `spatec exec --hold` runs it.

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"spatec.dev/spatec"
	"spatec.dev/spatec/exec/artefact"
	"spatec.dev/spatec/schema"
)

// authoritativePlans returns entrant's default plan on every authoritative
// environment it supports.
func authoritativePlans(t *testing.T, entrant string) []schema.Plan {
	t.Helper()
	return plansOf(t, entrant, func(p schema.Plan) bool { return p.Entrant.Variants[p.Variant].Default })
}

// plansOf returns entrant's plans on every authoritative environment that
// keep says to.
func plansOf(t *testing.T, entrant string, keep func(schema.Plan) bool) []schema.Plan {
	t.Helper()
	var out []schema.Plan
	for _, d := range planAll(t) {
		if d.Plan.Entrant.Name == entrant && d.Plan.Env.Class == "authoritative" && keep(d.Plan) {
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

// TestKafkaConnectReadsWhatItNeeds: on sensor-batch the worker runs the
// harness's insert path (Confluent's Avro converter, a Null landing table a
// view flattens into the workload's table) with the harness's insert sizes;
// on json-rows, schemaless JSON straight into the table.
func TestKafkaConnectReadsWhatItNeeds(t *testing.T) {
	for _, p := range plansOf(t, "kafka-connect", func(schema.Plan) bool { return true }) {
		t.Run(p.Env.Name+"/"+p.Variant, func(t *testing.T) {
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
				"tasks.max":                    strconv.Itoa(p.Env.Partitions),
				"topics":                       p.Workload.Topic,
				"hostname":                     host,
				"port":                         port,
				"username":                     p.Env.Endpoints.ClickHouseUser,
				"password":                     p.Env.Endpoints.ClickHousePassword,
				"database":                     p.Env.Endpoints.Database,
				"ignorePartitionsWhenBatching": "false",
			})
			if sink["name"] == "" {
				t.Error("the connector has no name")
			}
			// The batch knob binds: the consumer hands a task as many
			// records as the connector buffers.
			if sink["bufferCount"] != worker["consumer.max.poll.records"] {
				t.Errorf("bufferCount %s but max.poll.records %s", sink["bufferCount"], worker["consumer.max.poll.records"])
			}
			records, _ := strconv.Atoi(sink["bufferCount"])
			switch p.Workload.Name {
			case "sensor-batch":
				// The harness's path: each record is a whole batch, so an
				// insert carries bufferCount × 100 rows into the landing
				// table, which the view flattens into the workload's.
				expect(t, "clickhouse-sink.properties", sink, map[string]string{
					"topic2TableMap":                      p.Workload.Topic + "=spatec_connect_landing",
					"value.converter":                     "io.confluent.connect.avro.AvroConverter",
					"value.converter.schema.registry.url": p.Env.Endpoints.SchemaRegistry,
				})
				if rows := records * p.Workload.RowsPerMessage; rows != 200_000 {
					t.Errorf("an insert carries %d rows before the view; the harness's carry 2,000 batches of 100", rows)
				}
				o := p.Entrant.SinkObjects
				if o == nil || len(o.Create) != 2 ||
					!strings.Contains(o.Create[0], "spatec_connect_landing") || !strings.HasSuffix(o.Create[0], "ENGINE = Null") ||
					!strings.Contains(o.Create[1], "MATERIALIZED VIEW "+p.Env.Endpoints.Database+".spatec_connect_view TO "+p.Env.Endpoints.Database+"."+p.Workload.Table.Name) ||
					len(o.Drop) != 2 {
					t.Errorf("sink objects %+v; want a Null landing table and a view into %s, and both dropped", o, p.Workload.Table.Name)
				}
				// The harness's converter (converter-pom.xml), with its
				// closure, in a plugin directory of its own; the
				// environment pins its jars.
				want := []schema.MavenArtifact{{
					Repositories: []string{"https://packages.confluent.io/maven/"},
					Artifact:     "io.confluent:kafka-connect-avro-converter:8.3.0",
					To:           worker["plugin.path"] + "/avro-converter",
				}}
				if b := c.Build; b == nil || b.Layered == nil || !reflect.DeepEqual(b.Layered.Maven, want) {
					t.Errorf("build %+v; want Confluent's converter 8.3.0 and its closure in %s", b, want[0].To)
				}
				if p.Entrant.Blocked != "" {
					t.Errorf("blocked %q", p.Entrant.Blocked)
				}
			case "json-rows":
				expect(t, "clickhouse-sink.properties", sink, map[string]string{
					"topic2TableMap":                 p.Workload.Topic + "=" + p.Workload.Table.Name,
					"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
					"value.converter.schemas.enable": "false",
				})
				if p.Entrant.SinkObjects != nil || p.Entrant.Blocked != "" || len(c.Build.Layered.Maven) > 0 {
					t.Errorf("json-rows: sink objects %+v, blocked %q, maven %+v; want none of the Avro path", p.Entrant.SinkObjects, p.Entrant.Blocked, c.Build.Layered.Maven)
				}
			default:
				t.Fatalf("workload %s", p.Workload.Name)
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

// TestKafkaConnectRunsOnlyWithItsConverterPinned: until the environment
// pins the converter's closure, the plan says so and exec refuses the arm
// with the command that pins it, before anything is made (no engine is
// needed, and no results directory appears); once pins.cue holds it, the
// plan shows it pinned. No arm of the bench host is blocked.
func TestKafkaConnectRunsOnlyWithItsConverterPinned(t *testing.T) {
	const converter = "io.confluent:kafka-connect-avro-converter:8.3.0"
	code, out, errOut := cli(t, "plan", "--env", "bench-96c")
	if code != exitOK {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "BLOCKED") {
		t.Errorf("an arm of bench-96c is blocked:\n%s", out)
	}
	notPinned := "  closure of " + converter + " into /opt/kafka/plugins/avro-converter: NOT PINNED, exec refuses it (C16): run `spatec pin --env bench-96c` where https://packages.confluent.io/maven/ and Maven Central can be reached\n"
	if !strings.Contains(out, notPinned) {
		t.Errorf("plan does not say the converter is unpinned:\n%s", out)
	}

	results := filepath.Join(t.TempDir(), "results")
	code, _, errOut = cli(t, "exec", "--env", "bench-96c", "kafka-connect", "--results", results)
	want := "REFUSED: kafka-connect: container worker: image spatec-kafka-connect:4.3.1-ckc1.4.0: C16: the runtime closure of Maven artifact " + converter +
		" (into /opt/kafka/plugins/avro-converter) is not pinned in bench-96c, so nothing would check what goes into the image; run `spatec pin --env bench-96c` on a host that reaches https://packages.confluent.io/maven/ and Maven Central, review what it writes to envs/bench-96c/pins.cue, and commit it\n"
	if code != exitRefused || errOut != want {
		t.Errorf("exec: exit %d, stderr:\n%s\nwant:\n%s", code, errOut, want)
	}
	if _, err := os.Stat(results); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused exec left its results directory: %v", err)
	}
	// Its json-rows variant adds no converter, and is not refused for one.
	code, _, errOut = cli(t, "exec", "--env", "bench-96c", "kafka-connect:json-rows", "--results", results, "--pull", "sometimes")
	if code != exitUsage || strings.Contains(errOut, "closure") {
		t.Errorf("json-rows: exit %d, stderr:\n%s; want it past the pins, to the usage of --pull", code, errOut)
	}

	dir := t.TempDir()
	if err := os.CopyFS(dir, spatec.Tree); err != nil {
		t.Fatal(err)
	}
	jars := []schema.ClosureJar{
		{URL: "https://packages.confluent.io/maven/io/confluent/kafka-connect-avro-converter/8.3.0/kafka-connect-avro-converter-8.3.0.jar", SHA256: strings.Repeat("a", 64)},
		{URL: "https://repo.maven.apache.org/maven2/org/apache/avro/avro/1.12.0/avro-1.12.0.jar", SHA256: strings.Repeat("b", 64)},
	}
	if _, err := writePins(filepath.Join(dir, "envs", "bench-96c"), "bench-96c", nil, map[string][]schema.ClosureJar{converter: jars}, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, "plan", "--env", "bench-96c", "--tree", dir, "kafka-connect")
	pinned := "  closure of " + converter + " into /opt/kafka/plugins/avro-converter: pinned, 2 jars (list " + artefact.ClosureDigest(jars) + ", envs/bench-96c/pins.cue)\n"
	if code != exitOK || !strings.Contains(out, pinned) || strings.Contains(out, "closure of "+converter+" into /opt/kafka/plugins/avro-converter: NOT PINNED") {
		t.Errorf("plan with the closure pinned: exit %d, %s\n%s", code, errOut, out)
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
					Type     string   `yaml:"type"`
					Inputs   []string `yaml:"inputs"`
					Endpoint string   `yaml:"endpoint"`
					Database string   `yaml:"database"`
					Table    string   `yaml:"table"`
					Format   string   `yaml:"format"`

					BatchEncoding struct {
						Codec string `yaml:"codec"`
					} `yaml:"batch_encoding"`
					Auth  map[string]string `yaml:"auth"`
					Batch struct {
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
			// Each source's events are shaped to exactly the table's
			// columns: a sensor batch is decoded with the workload's
			// schema and flattened into its rows, each keyed by column.
			columns := p.Workload.Table.Columns
			var shaped []string
			for name, tr := range cfg.Transforms {
				shaped = append(shaped, name)
				for _, col := range columns {
					if !strings.Contains(tr.Source, fmt.Sprintf("%q: ", col)) {
						t.Errorf("transform %s does not make column %s: %s", name, col, tr.Source)
					}
				}
				if got := strings.Count(tr.Source, `": `); got != len(columns) {
					t.Errorf("transform %s makes %d fields for %d columns: %s", name, got, len(columns), tr.Source)
				}
				for _, want := range []string{`!= "` + p.Workload.Transform.DropUnit + `"`, ">= " + strconv.FormatFloat(*p.Workload.Transform.QualityFloor, 'f', -1, 64)} {
					if !strings.Contains(tr.Source, want) {
						t.Errorf("transform %s lacks the filter %s: %s", name, want, tr.Source)
					}
				}
			}
			for name, src := range cfg.Sources {
				dec, _ := src["decoding"].(map[string]any)
				avro, _ := dec["avro"].(map[string]any)
				if dec["codec"] != "avro" || avro["schema"] != p.Workload.Avro.Schema || avro["strip_schema_id_prefix"] != true {
					t.Errorf("source %s decodes with %v; want the workload's Avro schema after the framing", name, dec)
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
			// The event count binds, not the byte count, at a row's size in
			// Vector's memory (the harness documents the shipped 10 MiB cap
			// sealing at about 40,000 rows: 262 bytes a row), with room to
			// spare; the default batch's cap is the harness's 256 MiB; and
			// the buffer can fill a batch.
			const memoryRow = 10 << 20 / 40_000
			if sink.Batch.MaxEvents*memoryRow*2 > sink.Batch.MaxBytes || sink.Buffer.MaxEvents <= sink.Batch.MaxEvents {
				t.Errorf("batch %+v, buffer %+v at %d-byte rows in memory", sink.Batch, sink.Buffer, memoryRow)
			}
			if sink.Batch.MaxEvents == 262_144 && sink.Batch.MaxBytes != 256<<20 {
				t.Errorf("batch max_bytes %d for 262,144 rows; the harness's is 256 MiB", sink.Batch.MaxBytes)
			}
			// The harness's default: ArrowStream, selected by the batch
			// encoding (format alone sends JSON under an Arrow header).
			if sink.Format != "arrow_stream" || sink.BatchEncoding.Codec != "arrow_stream" {
				t.Errorf("format %q, batch encoding %q; want arrow_stream for both", sink.Format, sink.BatchEncoding.Codec)
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
			if p.Env.Class == "authoritative" {
				// A consumer with a thread of its own streams only while it
				// holds a thread of the broker pool (16 by default): the
				// pool must hold every consumer, and the flush is the
				// harness's 5 s, not the 7.5 s default.
				pool := regexp.MustCompile(`<background_message_broker_schedule_pool_size>(\d+)</`).FindStringSubmatch(cluster)
				if pool == nil {
					t.Errorf("config.d does not size the broker pool:\n%s", cluster)
				} else if n, _ := strconv.Atoi(pool[1]); n < p.Env.Partitions {
					t.Errorf("a broker pool of %d threads for %d consumers", n, p.Env.Partitions)
				}
				if !strings.Contains(setup, "kafka_flush_interval_ms = 5000") {
					t.Errorf("setup SQL lacks the 5 s flush:\n%s", setup)
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

// TestFlinkReadsWhatItNeeds: Flink runs as the harness runs it, a
// standalone application cluster whose whole configuration is the plan's
// config.yaml: each process's memory there is exactly its declared heap and
// non-heap, every component fixed, no stock key left to contradict it, and
// the job's settings after the harness's.
func TestFlinkReadsWhatItNeeds(t *testing.T) {
	for _, p := range authoritativePlans(t, "flink") {
		t.Run(p.Env.Name, func(t *testing.T) {
			jm := p.Entrant.Containers["jm"]
			if want := []string{"/opt/flink/bin/standalone-job.sh", "start-foreground", "--job-classname", "dev.spatec.flink.SensorJob"}; !slices.Equal(jm.Entrypoint, want) {
				t.Errorf("jm entrypoint %q, want the application cluster %q", jm.Entrypoint, want)
			}
			for name, want := range map[string]string{"jm": "jobmanager", "tm": "taskmanager"} {
				c := p.Entrant.Containers[name]
				if c.JVM == nil || c.JVM.Flink != want || c.JVM.ConfigFile != "/opt/flink/conf/config.yaml" || len(c.JVM.Options) != 0 {
					t.Fatalf("%s: jvm %+v; want Flink's %s options in its config.yaml alone", name, c.JVM, want)
				}
				if _, ok := c.Environment["FLINK_PROPERTIES"]; ok {
					t.Errorf("%s: FLINK_PROPERTIES would be appended to the config file", name)
				}
				var raw map[string]any
				if err := yaml.Unmarshal([]byte(c.Files[c.JVM.ConfigFile]), &raw); err != nil {
					t.Fatalf("%s: config.yaml: %v", name, err)
				}
				conf := map[string]string{}
				for k, v := range raw {
					conf[k] = fmt.Sprint(v)
				}
				// What C9 derived reaches the file, key for key.
				expect(t, name+" config.yaml", conf, c.JVM.Config)
				expect(t, name+" config.yaml", conf, map[string]string{
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
				// The stock file's totals would contradict the components
				// (Flink refuses to start): none is written.
				for _, k := range []string{"taskmanager.memory.process.size", "jobmanager.memory.process.size", "taskmanager.memory.flink.size", "jobmanager.memory.flink.size"} {
					if v, ok := conf[k]; ok {
						t.Errorf("%s: config.yaml sets %s: %s", name, k, v)
					}
				}
				for _, o := range c.JVM.JVMOptions {
					if !strings.Contains(conf["env.java.opts."+want], o) {
						t.Errorf("%s: env.java.opts.%s %q lacks %q", name, want, conf["env.java.opts."+want], o)
					}
				}
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
						t.Errorf("%s: a component is left to a fraction: %v", name, c.JVM.Config)
					}
					process = heap + size("taskmanager.memory.managed.size") + size("taskmanager.memory.framework.off-heap.size") +
						size("taskmanager.memory.task.off-heap.size") + size("taskmanager.memory.network.max") +
						size("taskmanager.memory.jvm-metaspace.size") + size("taskmanager.memory.jvm-overhead.max")
				} else {
					heap = size("jobmanager.memory.heap.size")
					if size("jobmanager.memory.jvm-overhead.min") != size("jobmanager.memory.jvm-overhead.max") {
						t.Errorf("%s: the overhead is left to a fraction: %v", name, c.JVM.Config)
					}
					process = heap + size("jobmanager.memory.off-heap.size") + size("jobmanager.memory.jvm-metaspace.size") + size("jobmanager.memory.jvm-overhead.max")
				}
				if heap != c.JVM.Heap || process != c.JVM.Heap+c.JVM.NonHeap || process > c.Memory {
					t.Errorf("%s: heap %d (declared %d), process %d (declared heap + non-heap %d, container %d)",
						name, heap, c.JVM.Heap, process, c.JVM.Heap+c.JVM.NonHeap, c.Memory)
				}
				// One scheme, once: the endpoint already carries it.
				if u := c.Environment["SPATEC_CLICKHOUSE_URL"]; u != p.Env.Endpoints.ClickHouseHTTP || strings.Count(u, "://") != 1 {
					t.Errorf("%s: SPATEC_CLICKHOUSE_URL %q, want %q", name, u, p.Env.Endpoints.ClickHouseHTTP)
				}
			}
		})
	}
}

// TestFlinkRunsAsTheOfficialImage: on every environment Flink runs in,
// both processes start as the official image and the harness's job start
// them, or the plan declares why not. jemalloc is preloaded from the
// package that installs it, at the plan's architecture's path (the image
// is built for it); every insert carries async_insert=0 where the
// environment's ClickHouse has the setting, and none where it has not,
// which is then declared; the TaskManager's registration retries at
// Flink's own delay; the Java runtime's difference is declared.
func TestFlinkRunsAsTheOfficialImage(t *testing.T) {
	multiarch := map[schema.Arch]string{schema.AMD64: "x86_64-linux-gnu", schema.ARM64: "aarch64-linux-gnu"}
	n := 0
	for _, d := range planAll(t) {
		p := d.Plan
		if p.Entrant.Name != "flink" {
			continue
		}
		n++
		t.Run(p.Env.Name+"/"+p.Variant, func(t *testing.T) {
			declared := map[string]bool{}
			for _, dev := range p.Entrant.Deviations {
				declared[dev.ID] = true
			}
			if !declared["debian-openjdk"] {
				t.Error("the runtime, Debian's OpenJDK where the harness runs Temurin, is not declared (debian-openjdk)")
			}
			async := clickHouseHasAsyncInsert(t, p.Env.Infra.ClickHouse)
			if declared["async-insert-unset"] == async {
				t.Errorf("async-insert-unset declared %v; the environment's ClickHouse has async_insert: %v", declared["async-insert-unset"], async)
			}
			dir, ok := multiarch[schema.Arch(p.Env.Arch.Name())]
			if !ok {
				t.Fatalf("no multiarch directory known for %s", p.Env.Arch.Name())
			}
			want := map[string]string{
				"LD_PRELOAD":               "/usr/lib/" + dir + "/libjemalloc.so.2",
				"SPATEC_SINK_ASYNC_INSERT": map[bool]string{true: "0", false: "omit"}[async],
			}
			for _, name := range []string{"jm", "tm"} {
				c := p.Entrant.Containers[name]
				expect(t, name+" environment", c.Environment, want)
				if c.Build == nil || c.Build.Debian == nil || !slices.ContainsFunc(c.Build.Debian.Packages, func(pkg string) bool {
					return pkg == "libjemalloc2" || strings.HasPrefix(pkg, "libjemalloc2=")
				}) {
					t.Errorf("%s: the image does not install libjemalloc2, which LD_PRELOAD names", name)
				}
				if conf := c.Files["/opt/flink/conf/config.yaml"]; strings.Contains(conf, "cluster.registration.") {
					t.Errorf("%s: config.yaml sets a registration option, which the harness leaves at Flink's default:\n%s", name, conf)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no Flink plan")
	}
}

// clickHouseHasAsyncInsert tells whether the ClickHouse an environment runs
// has the async_insert setting, which ClickHouse 21.11 added: its version
// as its Debian package is pinned, or else as its image's tag names it.
func clickHouseHasAsyncInsert(t *testing.T, ch schema.Service) bool {
	t.Helper()
	var version string
	if ch.Build != nil && ch.Build.Debian != nil {
		for _, pkg := range ch.Build.Debian.Packages {
			if v, ok := strings.CutPrefix(pkg, "clickhouse-server="); ok {
				version = v
			}
		}
	} else if ch.Image != nil {
		_, version, _ = strings.Cut(ch.Image.Ref, ":")
	}
	m := regexp.MustCompile(`^(\d+)\.(\d+)`).FindStringSubmatch(version)
	if m == nil {
		t.Fatalf("no ClickHouse version in %+v", ch)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 21 || major == 21 && minor >= 11
}

// TestSpateReadsWhatItNeeds: spate runs its own arm binary on a pipeline
// file spate itself parses, with the credentials from the environment.
func TestSpateReadsWhatItNeeds(t *testing.T) {
	for _, p := range plansOf(t, "spate", func(schema.Plan) bool { return true }) {
		t.Run(p.Env.Name+"/"+p.Variant, func(t *testing.T) {
			c := p.Entrant.Containers["arm"]
			d := c.Build.Debian
			if d == nil || len(d.Compile) != 1 || d.Compile[0].Cargo == nil || d.Compile[0].Cargo.Crate != "entrants/spate/arm" ||
				!slices.Equal(d.Entrypoint, []string{d.Compile[0].To}) || !slices.Equal(c.Args, []string{"/etc/spate/pipeline.yaml"}) {
				t.Fatalf("build %+v, args %q; want the arm compiled from entrants/spate/arm, run on /etc/spate/pipeline.yaml", c.Build, c.Args)
			}
			var pipe struct {
				Pipeline struct {
					Threads int `yaml:"threads"`
				} `yaml:"pipeline"`
				Source struct {
					Kafka struct {
						Brokers string `yaml:"brokers"`
						Topic   string `yaml:"topic"`
					} `yaml:"kafka"`
				} `yaml:"source"`
				Deserializer struct {
					Avro struct {
						Mode     string `yaml:"mode"`
						Registry struct {
							URL string `yaml:"url"`
						} `yaml:"registry"`
					} `yaml:"avro"`
				} `yaml:"deserializer"`
				Sink struct {
					ClickHouse struct {
						Database string   `yaml:"database"`
						Table    string   `yaml:"table"`
						Columns  []string `yaml:"columns"`
						User     string   `yaml:"user"`
						Password string   `yaml:"password"`
						Format   string   `yaml:"format"`
						Shards   []struct {
							Replicas []string `yaml:"replicas"`
						} `yaml:"shards"`
					} `yaml:"clickhouse"`
				} `yaml:"sink"`
			}
			if err := yaml.Unmarshal([]byte(c.Files["/etc/spate/pipeline.yaml"]), &pipe); err != nil {
				t.Fatal(err)
			}
			ch := pipe.Sink.ClickHouse
			if pipe.Pipeline.Threads != p.Env.Partitions || pipe.Source.Kafka.Brokers != p.Env.Endpoints.Brokers || pipe.Source.Kafka.Topic != p.Workload.Topic ||
				pipe.Deserializer.Avro.Mode != "confluent" || pipe.Deserializer.Avro.Registry.URL != p.Env.Endpoints.SchemaRegistry ||
				ch.Database != p.Env.Endpoints.Database || ch.Table != p.Workload.Table.Name || !slices.Equal(ch.Columns, p.Workload.Table.Columns) {
				t.Errorf("pipeline %+v", pipe)
			}
			if want := map[string]string{"default": "native", "native": "native", "rowbinary": "rowbinary"}[p.Variant]; ch.Format != want {
				t.Errorf("format %q, want %q", ch.Format, want)
			}
			for _, s := range ch.Shards {
				if len(s.Replicas) != 1 || s.Replicas[0] != p.Env.Endpoints.ClickHouseHTTP {
					t.Errorf("shard replicas %q, want %s", s.Replicas, p.Env.Endpoints.ClickHouseHTTP)
				}
			}
			// The password reaches spate through its own ${VAR} expansion,
			// not written into the file.
			if ch.User != "${CLICKHOUSE_USER}" || ch.Password != "${CLICKHOUSE_PASSWORD}" ||
				c.Environment["CLICKHOUSE_USER"] != p.Env.Endpoints.ClickHouseUser || c.Environment["CLICKHOUSE_PASSWORD"] != p.Env.Endpoints.ClickHousePassword {
				t.Errorf("credentials: user %q password %q, environment %v", ch.User, ch.Password, c.Environment)
			}
		})
	}
}

// TestRedpandaAsTheHarnessRunsIt: Redpanda's own memory budget is half its
// cap (4G of 8 GiB on bench-96c), and its health is the cluster report's
// verdict, not the admin API's first answer.
func TestRedpandaAsTheHarnessRunsIt(t *testing.T) {
	for _, p := range authoritativePlans(t, "spate") {
		b := p.Env.Infra.Broker
		i := slices.Index(b.Args, "--memory")
		if i < 0 || i+1 >= len(b.Args) || b.Args[i+1] != strconv.FormatInt(b.Memory>>31, 10)+"G" {
			t.Errorf("%s: redpanda args %q for a %d-byte cap; want --memory half the cap", p.Env.Name, b.Args, b.Memory)
		}
		if p.Env.Name == "bench-96c" && (b.Memory != 8<<30 || b.Args[i+1] != "4G") {
			t.Errorf("bench-96c: redpanda at %d bytes with --memory %s; the harness runs --memory 4G in 8 GiB", b.Memory, b.Args[i+1])
		}
		if h := b.Health; h == nil || !strings.Contains(strings.Join(h.Command, " "), "rpk cluster health | grep -Eq '^Healthy:[[:space:]]+true$'") {
			t.Errorf("%s: health %+v; want the report's Healthy line", p.Env.Name, h)
		}
	}
}
