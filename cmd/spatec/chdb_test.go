package main

// The SQL two arms send to the authoritative environments' ClickHouse
// (26.x), taken from their plans and run on ClickHouse 26.x's engine in
// process (chDB): the Kafka engine arm's setup script and Kafka Connect's
// landing table and view. Each proves its transform by the checksum of
// what lands from the prefill's own messages.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/internal/chdb"
	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
)

// on26 runs statements on one chDB session for one test, failing the test
// on an error.
type on26 struct {
	t *testing.T
	s *chdb.Session
}

func (o on26) try(stmts ...string) ([]chdb.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return o.s.Run(ctx, stmts...)
}

func (o on26) run(stmts ...string) []chdb.Result {
	o.t.Helper()
	res, err := o.try(stmts...)
	if err != nil {
		o.t.Fatal(err)
	}
	return res
}

func (o on26) uints(query string) []uint64 {
	o.t.Helper()
	r := o.run(query)[0]
	if len(r.Rows) != 1 {
		o.t.Fatalf("%s answered %d rows; want 1", query, len(r.Rows))
	}
	out := make([]uint64, len(r.Columns))
	for i := range out {
		v, err := r.Uint64(0, i)
		if err != nil {
			o.t.Fatalf("%s: %v", query, err)
		}
		out[i] = v
	}
	return out
}

// deadPort is a loopback port nothing listens on: taken, then given back.
func deadPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("something listens on %s", addr)
	}
	return addr
}

// schemaRegistry answers as a schema registry does what AvroConfluent asks
// for a message's schema (GET /schemas/ids/ID), on the loopback: schema
// under id. It counts the lookups.
func schemaRegistry(t *testing.T, id uint32, schema string) (url string, lookups *atomic.Int64) {
	t.Helper()
	lookups = new(atomic.Int64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]string{"schema": schema})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(fmt.Sprintf("GET /schemas/ids/%d", id), func(w http.ResponseWriter, _ *http.Request) {
		lookups.Add(1)
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		w.Write(body)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), lookups
}

// prefillMessages writes the first n messages of wl as the prefill puts
// them on the topic (the registry's framing, schemaID, and the Avro
// datum), one after another: what AvroConfluent reads as a stream.
func prefillMessages(t *testing.T, wl schema.Workload, n uint64, schemaID uint32) string {
	t.Helper()
	k, err := workloads.SensorBatch(wl)
	if err != nil {
		t.Fatal(err)
	}
	enc := k.NewEncoder()
	var buf []byte
	for b := range n {
		if buf, err = enc.AppendMessage(buf, schemaID, b); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "messages.avro")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// landMessages inserts messages (a prefillMessages file) into table, a
// table of the batch's columns, decoded by AvroConfluent as columns
// (what a Kafka engine table of those columns reads from each message):
// the table's views write what they make of them.
func (o on26) landMessages(table, columns, messages string) {
	o.t.Helper()
	o.run(fmt.Sprintf("INSERT INTO %s SELECT * FROM file('%s', 'AvroConfluent', '%s')", table, messages, columns))
}

// checksumIsTheClosedForm reads the checksum of the plan's table as the
// gates do, over n messages, and checks every sum against the closed form.
func (o on26) checksumIsTheClosedForm(p schema.Plan, n int64) {
	o.t.Helper()
	q, err := chstore.SQLFor(p.Table())
	if err != nil {
		o.t.Fatal(err)
	}
	exp, err := workloads.Expect(context.Background(), p.Workload, n, nil)
	if err != nil {
		o.t.Fatal(err)
	}
	if got := o.uints(q.Counts(p.Workload.Table.Identity)); got[0] != exp.Rows || got[1] != exp.Rows {
		o.t.Errorf("%s = %v; the transform of %d messages lands %d rows, each once", q.Counts(p.Workload.Table.Identity), got, n, exp.Rows)
	}
	sums, opts := chstore.WorkloadChecksum(p.Workload, n, false, 0)
	c := chstore.NewChecksum(sums)
	for _, query := range q.Checksum(sums, opts) {
		if err := c.Add(sums, o.uints(query)); err != nil {
			o.t.Fatal(err)
		}
	}
	if c.Rows != exp.Rows {
		o.t.Errorf("%d rows summed; the closed form has %d", c.Rows, exp.Rows)
	}
	for name, want := range exp.Sums {
		if c.Sums[name].Cmp(want) != 0 {
			o.t.Errorf("%s = %s after the view; the closed form of %d messages is %s", name, c.Sums[name], n, want)
		}
	}
}

// profileSettings are the settings of the default profile of a users.d
// file, in order.
func profileSettings(t *testing.T, xml string) [][2]string {
	t.Helper()
	start, end := strings.Index(xml, "<default>"), strings.Index(xml, "</default>")
	if start < 0 || end < start {
		t.Fatalf("no default profile in:\n%s", xml)
	}
	var out [][2]string
	for _, m := range regexp.MustCompile(`<(\w+)>([^<]*)</(\w+)>`).FindAllStringSubmatch(xml[start:end], -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// sqlValue is a setting's value as SET takes it: a number as it is, else
// a string.
func sqlValue(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", "\\'") + "'"
}

// batches is how many of the prefill's messages the transforms are
// checked over: a few hundred batches, every derivation's period (sensors
// excepted) several times over.
const batches = 300

// The Kafka engine arm's setup script (spatec.sql), its server's
// configuration and profile, on ClickHouse 26.x, for every environment
// that runs the arm on sensor-batch.
//
// chDB starts no Kafka table: its CREATE builds the table, which reads
// every setting (a misspelled one is refused, UNKNOWN_SETTING), then fails
// where the table would register for streaming, with "Shutdown was
// called" (code 49), an embedded engine's limit that a server does not
// have; the table stays in the catalog, so the view is made on it as the
// script makes it, its SELECT checked against the queue's columns. The
// Distributed table is made as written, over the plan's cluster. What runs
// is the plan's, with these rewrites only:
//   - kafka_broker_list and the cluster's replica point at a loopback port
//     nothing listens on (tests address only the loopback; the plan's
//     hosts are the bench's containers);
//   - the profile's schema registry is a loopback stand-in that serves the
//     workload's schema;
//   - kafka_num_consumers is lowered to this host's limit when it exceeds
//     it (the server's limit is max(its cores, 16); the plan's own
//     container is checked against it).
//
// Then the transform: the prefill's messages, decoded by AvroConfluent as
// the queue's columns, through a view of the same SELECT into the
// workload's table, land rows whose checksum is the closed form.
func TestKafkaEngineSetupOnClickHouse26(t *testing.T) {
	ran := 0
	for _, d := range planAll(t) {
		p := d.Plan
		if p.Entrant.Name != "clickhouse-kafka-engine" || p.Workload.Name != "sensor-batch" {
			continue
		}
		ran++
		t.Run(p.Env.Name, func(t *testing.T) { kafkaEngineOn26(t, p) })
	}
	if ran < 2 {
		t.Errorf("the Kafka engine arm runs sensor-batch on %d environments; bench-96c and retired-32c at least", ran)
	}
}

func kafkaEngineOn26(t *testing.T, p schema.Plan) {
	c := p.Entrant.Containers["engine"]
	script, ok := c.Files["/docker-entrypoint-initdb.d/spatec.sql"]
	if !ok {
		t.Fatalf("the engine has no setup script; files: %v", c.Files)
	}
	stmts, err := chdb.Split(script)
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 3 || !strings.HasPrefix(stmts[0], "CREATE TABLE spatec_queue (") ||
		!strings.HasPrefix(stmts[1], "CREATE TABLE spatec_forward (") || !strings.HasPrefix(stmts[2], "CREATE MATERIALIZED VIEW spatec_view TO spatec_forward AS SELECT") {
		t.Fatalf("the setup script is not the queue, the forward table and the view:\n%s", script)
	}
	queue, forward, view := stmts[0], stmts[1], stmts[2]
	engineAt := strings.Index(queue, "ENGINE = Kafka SETTINGS")
	if engineAt < 0 {
		t.Fatalf("the queue is not a Kafka table:\n%s", queue)
	}
	open := len("CREATE TABLE spatec_queue (")
	columns := strings.TrimSuffix(strings.TrimSpace(queue[open:engineAt]), ")")

	// The server's configuration, its sink a dead loopback port.
	config := c.Files["/etc/clickhouse-server/config.d/spatec-kafka.xml"]
	sinkHost, sinkPort, _ := strings.Cut(p.Env.Endpoints.ClickHouse, ":")
	replica := "<host>" + sinkHost + "</host>\n                    <port>" + sinkPort + "</port>"
	if !strings.Contains(config, replica) {
		t.Fatalf("the configuration's cluster is not the sink %s:\n%s", p.Env.Endpoints.ClickHouse, config)
	}
	deadHost, deadPortNum, _ := strings.Cut(deadPort(t), ":")
	config = strings.Replace(config, replica, "<host>"+deadHost+"</host>\n                    <port>"+deadPortNum+"</port>", 1)
	o := on26{t, testenv.ChDB(t, chdb.Options{Config: config})}
	if r := o.run("SELECT host_name, toString(port) FROM system.clusters WHERE cluster = 'spatec_sink'")[0]; len(r.Rows) != 1 {
		t.Fatalf("the configuration's cluster spatec_sink is not loaded: %+v", r)
	}

	// The profile, its schema registry the loopback stand-in.
	const schemaID = 7
	registry, lookups := schemaRegistry(t, schemaID, p.Workload.Avro.Schema)
	profile := profileSettings(t, c.Files["/etc/clickhouse-server/users.d/spatec-forward.xml"])
	for _, kv := range profile {
		v := kv[1]
		if kv[0] == "format_avro_schema_registry_url" {
			if v != p.Env.Endpoints.SchemaRegistry {
				t.Errorf("the profile's registry is %s; the environment's is %s", v, p.Env.Endpoints.SchemaRegistry)
			}
			v = registry
		}
		o.run("SET " + kv[0] + " = " + sqlValue(v))
	}
	if len(profile) < 3 {
		t.Errorf("the profile sets %v", profile)
	}

	// The Kafka table, its brokers a dead loopback port.
	brokers := regexp.MustCompile(`kafka_broker_list = '[^']*'`)
	if got := brokers.FindAllString(queue, -1); len(got) != 1 || got[0] != "kafka_broker_list = '"+p.Env.Endpoints.Brokers+"'" {
		t.Fatalf("the queue's broker list is %q; the environment's brokers are %s", got, p.Env.Endpoints.Brokers)
	}
	queue = brokers.ReplaceAllLiteralString(queue, "kafka_broker_list = '"+deadPort(t)+"'")
	// Its settings are read when the table is built: a misspelled one is
	// refused.
	misspelt := strings.Replace(strings.Replace(queue, "kafka_max_block_size", "kafka_max_block_sizes", 1), "spatec_queue", "spatec_misspelt", 1)
	var ce *chdb.Error
	if _, err := o.try(misspelt); !errors.As(err, &ce) || ce.Name != "UNKNOWN_SETTING" {
		t.Fatalf("a misspelled setting gave %v; want UNKNOWN_SETTING", err)
	}
	_, err = o.try(queue)
	limit := regexp.MustCompile(`^The number of consumers can not be bigger than (\d+)\.`)
	if errors.As(err, &ce) && ce.Code == 36 && limit.MatchString(ce.Message) {
		// The server's limit is max(its cores, 16); the arm's server has
		// its container's CPUs.
		here, _ := strconv.Atoi(limit.FindStringSubmatch(ce.Message)[1])
		consumers := regexp.MustCompile(`kafka_num_consumers = (\d+)`)
		n, _ := strconv.Atoi(consumers.FindStringSubmatch(queue)[1])
		if float64(n) > max(c.CPUs, 16) {
			t.Errorf("kafka_num_consumers = %d, but the arm's server has %v CPUs: it refuses more than max(cores, 16) consumers", n, c.CPUs)
		}
		t.Logf("kafka_num_consumers = %d is over this host's limit of %d (the arm's server, with %v CPUs, takes it); lowered to %d here", n, here, c.CPUs, here)
		queue = consumers.ReplaceAllLiteralString(queue, fmt.Sprintf("kafka_num_consumers = %d", here))
		_, err = o.try(queue)
	}
	switch {
	case err == nil:
		t.Log("chDB made the Kafka table and started it")
	case errors.As(err, &ce) && ce.Code == 49 && ce.Message == "Shutdown was called.":
		// Built, its settings read, but not registered for streaming,
		// which chDB has shut down: the table stays.
		if got := o.uints("EXISTS TABLE spatec_queue"); got[0] != 1 {
			t.Fatalf("the Kafka table failed to start and is gone: %v", err)
		}
	default:
		t.Fatalf("the Kafka table: %v", err)
	}
	def, err := o.run("SHOW CREATE TABLE spatec_queue")[0].Text(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range regexp.MustCompile(`\b(kafka_\w+) = `).FindAllStringSubmatch(queue, -1) {
		if !strings.Contains(def, set[1]+" = ") {
			t.Errorf("the Kafka table as made lacks %s:\n%s", set[1], def)
		}
	}
	o.run(forward, view, "SHOW CREATE TABLE spatec_forward", "SHOW CREATE TABLE spatec_view")

	// The transform, through a view of the same SELECT into the
	// workload's table, from a Null table of the queue's columns.
	o.run("DROP TABLE spatec_view", "DROP TABLE spatec_queue", "CREATE TABLE spatec_queue ("+columns+") ENGINE = Null")
	db := p.Env.Endpoints.Database
	o.run(chstore.CreateDatabase(db), "USE "+db, p.Workload.Table.DDL, "USE default",
		strings.Replace(view, "TO spatec_forward AS", "TO "+p.Table()+" AS", 1))
	o.landMessages("spatec_queue", columns, prefillMessages(t, p.Workload, batches, schemaID))
	if lookups.Load() == 0 {
		t.Error("AvroConfluent never asked the registry for the schema")
	}
	o.checksumIsTheClosedForm(p, batches)
}

// Kafka Connect's own objects on the sink (its landing table and the view
// that flattens it into the workload's table), made as the executor makes
// them before a run (prepareTable) and dropped as after it, on ClickHouse
// 26.x; the prefill's messages, decoded by AvroConfluent as the landing
// table's columns (the connector decodes them with Confluent's converter
// into the same columns), land rows whose checksum is the closed form.
func TestKafkaConnectSinkObjectsOnClickHouse26(t *testing.T) {
	ran := 0
	for _, p := range authoritativePlans(t, "kafka-connect") {
		if p.Workload.Name != "sensor-batch" {
			continue
		}
		ran++
		t.Run(p.Env.Name, func(t *testing.T) { connectOn26(t, p) })
	}
	if ran < 2 {
		t.Errorf("Kafka Connect runs sensor-batch on %d environments; bench-96c and retired-32c at least", ran)
	}
}

func connectOn26(t *testing.T, p schema.Plan) {
	objs := p.Entrant.SinkObjects
	if objs == nil || len(objs.Create) != 2 || len(objs.Drop) != 2 {
		t.Fatalf("sink objects %+v; want the landing table and the view, and their drops", objs)
	}
	landing := p.Env.Endpoints.Database + ".spatec_connect_landing"
	prefix := "CREATE TABLE " + landing + " ("
	if !strings.HasPrefix(objs.Create[0], prefix) || !strings.HasSuffix(objs.Create[0], ") ENGINE = Null") {
		t.Fatalf("the landing table is %q", objs.Create[0])
	}
	columns := strings.TrimSuffix(strings.TrimPrefix(objs.Create[0], prefix), ") ENGINE = Null")
	const schemaID = 3
	registry, lookups := schemaRegistry(t, schemaID, p.Workload.Avro.Schema)
	o := on26{t, testenv.ChDB(t, chdb.Options{})}
	o.run("SET format_avro_schema_registry_url = " + sqlValue(registry))

	// prepareTable, on a store opened on the environment's database.
	db := p.Env.Endpoints.Database
	q, err := chstore.SQLFor(p.Table())
	if err != nil {
		t.Fatal(err)
	}
	o.run(chstore.CreateDatabase(db), "USE "+db, q.Exists(), q.Drop(), p.Workload.Table.DDL, q.Exists(), q.ShowCreate(), q.Truncate())
	o.run(append(append([]string{}, objs.Drop...), objs.Create...)...)
	o.landMessages(landing, columns, prefillMessages(t, p.Workload, batches, schemaID))
	if lookups.Load() == 0 {
		t.Error("AvroConfluent never asked the registry for the schema")
	}
	if got := o.uints("SELECT count() FROM " + landing); got[0] != 0 {
		t.Errorf("the landing table keeps %d rows; it is a Null table", got[0])
	}
	o.uints(q.Count())
	o.checksumIsTheClosedForm(p, batches)

	// After the run: the objects dropped, the table kept.
	o.run(objs.Drop...)
	for _, obj := range []string{landing, db + ".spatec_connect_view"} {
		if got := o.uints("EXISTS TABLE " + obj); got[0] != 0 {
			t.Errorf("%s is left after the drops", obj)
		}
	}
	if got := o.uints(q.Exists()); got[0] != 1 {
		t.Error("the drops took the workload's table")
	}
}
