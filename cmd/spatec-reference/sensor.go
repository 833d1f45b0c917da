package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"spatec.dev/spatec/exec/chstore"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// The sensor-batch workload, as this arm implements it: each message is
// Confluent-framed Avro whose schema the registry serves by the id in the
// frame; the arm decodes it with hamba/avro, flattens its events into one
// row each, applies the workload's transform, and inserts the rows in
// sensor_events' column order.

// sensorBatch is a message as this arm decodes it.
type sensorBatch struct {
	BatchID   int64         `avro:"batch_id"`
	Sensor    string        `avro:"sensor"`
	Region    *string       `avro:"region"`
	BatchTSMs int64         `avro:"batch_ts_ms"`
	SendTSUs  int64         `avro:"send_ts_us"`
	Events    []sensorEvent `avro:"events"`
}

type sensorEvent struct {
	Seq     int32    `avro:"seq"`
	Name    string   `avro:"name"`
	Unit    string   `avro:"unit"`
	Value   int64    `avro:"value"`
	Quality *float64 `avro:"quality"`
	Tags    []string `avro:"tags"`
}

// transform is the workload's transform, with its parameters from the
// plan (the workload's dropUnit and qualityFloor).
type transform struct {
	dropUnit     string
	qualityFloor float64
	// fault, for a test-only variant, breaks one step on purpose, so
	// that a test can see the checksum gate fail: "skip-upper" writes
	// the name as it came.
	fault string
}

// apply appends the rows batch b becomes, in order: drop the drop unit's
// readings, drop a non-null quality below the floor, write a null region
// as ”, value_scaled = value*1000/(seq+1) in integer division, and the
// name with its ASCII letters upper-cased (strings.ToUpper would also
// upper-case other letters, whatever the locale).
func (t transform) apply(rows *chstore.SensorRows, b *sensorBatch) int {
	region := ""
	if b.Region != nil {
		region = *b.Region
	}
	n := 0
	for _, ev := range b.Events {
		if ev.Unit == t.dropUnit {
			continue
		}
		if ev.Quality != nil && *ev.Quality < t.qualityFloor {
			continue
		}
		name := asciiUpper(ev.Name)
		if t.fault == "skip-upper" {
			name = ev.Name
		}
		rows.Add(sensorbatch.Row{
			BatchID:     uint64(b.BatchID),
			EventSeq:    uint16(ev.Seq),
			Sensor:      b.Sensor,
			Region:      region,
			NameUpper:   name,
			Unit:        ev.Unit,
			Value:       ev.Value,
			ValueScaled: ev.Value * 1000 / int64(ev.Seq+1),
			Quality:     ev.Quality,
			Tags:        ev.Tags,
			BatchTSMs:   b.BatchTSMs,
			SendTSUs:    b.SendTSUs,
		})
		n++
	}
	return n
}

func asciiUpper(s string) string {
	for i := 0; i < len(s); i++ {
		if 'a' <= s[i] && s[i] <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'a' <= b[j] && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// schemas finds a writer's schema by the id its frame carries.
type schemas interface {
	byID(ctx context.Context, id int) (avro.Schema, error)
}

// registrySchemas asks the schema registry once per id and keeps what it
// said.
type registrySchemas struct {
	cl   *sr.Client
	url  string
	mu   sync.Mutex
	byId map[int]avro.Schema
}

func newRegistrySchemas(url string) (*registrySchemas, error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return nil, fmt.Errorf("a schema registry client for %s: %w", url, err)
	}
	return &registrySchemas{cl: cl, url: url, byId: map[int]avro.Schema{}}, nil
}

func (r *registrySchemas) byID(ctx context.Context, id int) (avro.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.byId[id]; ok {
		return s, nil
	}
	got, err := r.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("looking up schema id %d at the registry %s: %w", id, r.url, err)
	}
	if got.Type != sr.TypeAvro {
		return nil, fmt.Errorf("schema id %d at the registry %s is %s, not Avro", id, r.url, got.Type)
	}
	s, err := avro.Parse(got.Schema)
	if err != nil {
		return nil, fmt.Errorf("parsing schema id %d from the registry %s: %w", id, r.url, err)
	}
	r.byId[id] = s
	return s, nil
}

// sensorRows is a worker's batch of sensor_events rows.
type sensorRows struct {
	schemas schemas
	t       transform
	rows    chstore.SensorRows
	frame   sr.ConfluentHeader
}

func (s *sensorRows) add(ctx context.Context, value []byte) (int, error) {
	id, datum, err := s.frame.DecodeID(value)
	if err != nil {
		return 0, fmt.Errorf("reading the message's Confluent frame: %w", err)
	}
	schema, err := s.schemas.byID(ctx, id)
	if err != nil {
		return 0, err
	}
	// A batch of its own: the rows keep its events' tags and qualities.
	var b sensorBatch
	if err := avro.Unmarshal(schema, datum, &b); err != nil {
		return 0, fmt.Errorf("decoding a %d-byte datum with schema id %d: %w", len(datum), id, err)
	}
	return s.t.apply(&s.rows, &b), nil
}

func (s *sensorRows) len() int { return s.rows.Len() }

func (s *sensorRows) reset() { s.rows.Reset() }

func (s *sensorRows) insert(ctx context.Context, store *chstore.Store, table string) error {
	return store.InsertSensorRows(ctx, table, &s.rows)
}
