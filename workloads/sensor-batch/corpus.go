// Package sensorbatch is the sensor-batch workload's generator and its
// closed-form expectation: the benchmark's one workload, declared in
// workload.cue beside this file.
//
// Every field of batch b is a function of b (and an event's seq), so the
// corpus of N batches is the same bytes on every machine, the rows a
// correct arm must land and their sums are computed here without reading
// what any arm wrote, and (batch_id, event_seq) identifies a row. The
// derivations follow the public reference harness's generator
// (spate-etl/benchmark, harness/src/corpus.rs), and the golden tests pin
// the bytes and sums that harness publishes for its first 1000 batches.
//
// The constants (how many sensors, names, tags; the units; the base
// timestamp) are the workload's, read from its CUE; the arithmetic that
// turns them into fields is here, and dataset_version covers both.
package sensorbatch

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// Schema is the workload's Avro schema, the file workload.cue embeds: every
// arm decodes with it, by the id the registry gives it.
//
//go:embed sensor_batch.avsc
var Schema string

// Constants are the generator's constants, as workload.cue declares them.
type Constants struct {
	// EventsPerBatch is the fan-out: the rows one message becomes before
	// the transform's filters.
	EventsPerBatch int `json:"eventsPerBatch"`
	// Sensors, Names and Tags are how many distinct sensors, metric names
	// and tags the corpus uses.
	Sensors uint64 `json:"sensors"`
	Names   uint64 `json:"names"`
	Tags    uint64 `json:"tags"`
	// Units are the units, in order; event (b, s) has unit
	// Units[(7b+s) mod len(Units)].
	Units []string `json:"units"`
	// BaseTSMillis is batch 0's timestamp, in Unix milliseconds.
	BaseTSMillis int64 `json:"baseTsMs"`
}

// Transform is the transform's parameters, as workload.cue declares them.
type Transform struct {
	// DropUnit is the unit whose readings are dropped.
	DropUnit string `json:"dropUnit"`
	// QualityFloor drops a reading whose quality is not null and below it.
	QualityFloor float64 `json:"qualityFloor"`
}

// validate reports every problem with the constants at once.
func (c Constants) validate(t Transform) error {
	var errs []error
	if c.EventsPerBatch < 1 || c.EventsPerBatch > 1<<16 {
		errs = append(errs, fmt.Errorf("eventsPerBatch is %d; it must be in [1, 65536] (event_seq is a UInt16)", c.EventsPerBatch))
	}
	for name, n := range map[string]uint64{"sensors": c.Sensors, "names": c.Names, "tags": c.Tags} {
		if n == 0 {
			errs = append(errs, fmt.Errorf("%s is 0; it must be at least 1", name))
		}
	}
	if len(c.Units) == 0 {
		errs = append(errs, errors.New("units is empty; give at least one"))
	}
	if !slices.Contains(c.Units, t.DropUnit) {
		errs = append(errs, fmt.Errorf("dropUnit %q is not one of the units %q: the transform would drop nothing", t.DropUnit, c.Units))
	}
	if c.BaseTSMillis < 0 {
		errs = append(errs, fmt.Errorf("baseTsMs is %d; it must not be negative", c.BaseTSMillis))
	}
	return errors.Join(errs...)
}

// Batch is one message, as the Avro schema has it.
type Batch struct {
	BatchID   int64   `avro:"batch_id"`
	Sensor    string  `avro:"sensor"`
	Region    *string `avro:"region"`
	BatchTSMs int64   `avro:"batch_ts_ms"`
	SendTSUs  int64   `avro:"send_ts_us"`
	Events    []Event `avro:"events"`
}

// Event is one reading of a batch.
type Event struct {
	Seq     int32    `avro:"seq"`
	Name    string   `avro:"name"`
	Unit    string   `avro:"unit"`
	Value   int64    `avro:"value"`
	Quality *float64 `avro:"quality"`
	Tags    []string `avro:"tags"`
}

// Corpus derives the workload's batches. It is safe for concurrent use;
// an Encoder, which holds buffers, is not.
type Corpus struct {
	c Constants
	t Transform

	schema avro.Schema
	api    avro.API

	// The strings the derivations pick from, made once: a field is an
	// index into one of these, so deriving it allocates nothing.
	sensors, regions, names, tags []string
}

// regions is how many distinct regions there are.
const regions = 7

// New checks the constants and parses the schema.
func New(c Constants, t Transform) (*Corpus, error) {
	if err := c.validate(t); err != nil {
		return nil, fmt.Errorf("sensor-batch: %w", err)
	}
	schema, err := avro.Parse(Schema)
	if err != nil {
		return nil, fmt.Errorf("sensor-batch: parsing sensor_batch.avsc: %w", err)
	}
	k := &Corpus{
		c: c, t: t, schema: schema,
		// One block per array, its count and no byte size: the encoding
		// every Avro implementation writes by default, so the bytes are
		// the same whoever generates them.
		api: avro.Config{DisableBlockSizeHeader: true, BlockLength: 1 << 30}.Freeze(),
	}
	k.sensors = numbered("sensor-", c.Sensors)
	k.regions = numbered("region-", regions)
	k.names = numbered("metric_", c.Names)
	k.tags = numbered("tag-", c.Tags)
	return k, nil
}

func numbered(prefix string, n uint64) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// Constants returns the corpus's constants.
func (k *Corpus) Constants() Constants { return k.c }

// The derivations: every field of the corpus, as a function of the batch id
// b and the event's seq s. Each string field is an index into the tables
// above, which is how the expectation fingerprints a field without
// formatting it again.

func (k *Corpus) sensorIndex(b uint64) uint64 { return b % k.c.Sensors }

// regionIndex is -1 for a null region: one batch in ten.
func (k *Corpus) regionIndex(b uint64) int {
	if b%10 == 0 {
		return -1
	}
	return int(b % regions)
}

func (k *Corpus) batchTSMillis(b uint64) int64 { return k.c.BaseTSMillis + int64(b) }

// prefillSendTSMicros is a prefilled batch's send_ts_us: derived from b,
// not read from a clock, so a prefill is the same bytes every time.
func (k *Corpus) prefillSendTSMicros(b uint64) int64 { return k.c.BaseTSMillis*1000 + int64(b) }

func (k *Corpus) nameIndex(b, s uint64) uint64 { return (b*31 + s) % k.c.Names }

func (k *Corpus) unitIndex(b, s uint64) uint64 { return (b*7 + s) % uint64(len(k.c.Units)) }

// value is below 2^31 and never negative, so value*1000/(seq+1) truncates
// the same way in every language.
func (k *Corpus) value(b, s uint64) int64 {
	return int64((b*1_000_003 + s*97) % 2_147_483_647)
}

// quality is null (ok false) for one event in five.
func (k *Corpus) quality(b, s uint64) (q float64, ok bool) {
	if (b+s)%5 == 0 {
		return 0, false
	}
	return float64((b*13+s*7)%100) / 100.0, true
}

func (k *Corpus) tagCount(b, s uint64) uint64 { return (b + s) % 4 }

func (k *Corpus) tagIndex(b, s, j uint64) uint64 { return (b + s + j) % k.c.Tags }

// Keeps tells whether the transform keeps event s of batch b: its unit is
// not the drop unit, and its quality is null or at least the floor.
func (k *Corpus) Keeps(b, s uint64) bool {
	if k.c.Units[k.unitIndex(b, s)] == k.t.DropUnit {
		return false
	}
	q, ok := k.quality(b, s)
	return !ok || q >= k.t.QualityFloor
}

// ValueScaled is the transform's value_scaled: value*1000/(seq+1), integer
// division.
func ValueScaled(value int64, seq int32) int64 { return value * 1000 / int64(seq+1) }

// ASCIIUpper is the transform's name_upper: upper case of ASCII letters
// only, whatever the locale.
func ASCIIUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

// Key is the Kafka record key of batch b: its sensor.
func (k *Corpus) Key(b uint64) string { return k.sensors[k.sensorIndex(b)] }

// Partition is the partition batch b is written to: b mod partitions,
// round-robin, so that no partition holds more than one batch more than
// another.
func Partition(b uint64, partitions int) int32 { return int32(b % uint64(partitions)) }

// An Encoder encodes batches; each goroutine needs its own.
type Encoder struct {
	k     *Corpus
	batch Batch
	// qualities and tags back the events' pointers and slices, reused
	// from batch to batch.
	qualities []float64
	tags      [][]string
	w         *avro.Writer
	frame     sr.ConfluentHeader
}

// NewEncoder returns an encoder of the corpus's batches.
func (k *Corpus) NewEncoder() *Encoder {
	n := k.c.EventsPerBatch
	e := &Encoder{k: k, qualities: make([]float64, n), tags: make([][]string, n), w: avro.NewWriter(nil, 8192, avro.WithWriterConfig(k.api))}
	e.batch.Events = make([]Event, n)
	for i := range e.tags {
		e.tags[i] = make([]string, 0, 3)
	}
	return e
}

// Batch fills the encoder's batch with batch b, sent at sendTSUs, and
// returns it; it is valid until the next call.
func (e *Encoder) Batch(b uint64, sendTSUs int64) *Batch {
	k, out := e.k, &e.batch
	out.BatchID = int64(b)
	out.Sensor = k.sensors[k.sensorIndex(b)]
	out.Region = nil
	if r := k.regionIndex(b); r >= 0 {
		out.Region = &k.regions[r]
	}
	out.BatchTSMs = k.batchTSMillis(b)
	out.SendTSUs = sendTSUs
	for i := range out.Events {
		s := uint64(i)
		ev := &out.Events[i]
		ev.Seq = int32(i)
		ev.Name = k.names[k.nameIndex(b, s)]
		ev.Unit = k.c.Units[k.unitIndex(b, s)]
		ev.Value = k.value(b, s)
		ev.Quality = nil
		if q, ok := k.quality(b, s); ok {
			e.qualities[i] = q
			ev.Quality = &e.qualities[i]
		}
		tags := e.tags[i][:0]
		for j := range k.tagCount(b, s) {
			tags = append(tags, k.tags[k.tagIndex(b, s, j)])
		}
		e.tags[i], ev.Tags = tags, tags
	}
	return out
}

// AppendDatum appends the Avro datum of batch b, sent at sendTSUs, to dst.
func (e *Encoder) AppendDatum(dst []byte, b uint64, sendTSUs int64) ([]byte, error) {
	e.w.Reset(nil)
	e.w.WriteVal(e.k.schema, e.Batch(b, sendTSUs))
	if e.w.Error != nil {
		return dst, fmt.Errorf("sensor-batch: encoding batch %d: %w", b, e.w.Error)
	}
	return append(dst, e.w.Buffer()...), nil
}

// AppendMessage appends prefilled batch b as it goes on the wire: the
// Confluent framing (0x00, schemaID as a big-endian u32) and the datum.
func (e *Encoder) AppendMessage(dst []byte, schemaID uint32, b uint64) ([]byte, error) {
	dst, _ = e.frame.AppendEncode(dst, int(schemaID), nil) // never fails
	return e.AppendDatum(dst, b, e.k.prefillSendTSMicros(b))
}

// FrameBytes is the Confluent framing's size: the magic byte and the id.
const FrameBytes = 5

// Row is one row of sensor_events, in the table's column order.
type Row struct {
	BatchID     uint64
	EventSeq    uint16
	Sensor      string
	Region      string
	NameUpper   string
	Unit        string
	Value       int64
	ValueScaled int64
	Quality     *float64
	Tags        []string
	BatchTSMs   int64 // batch_ts, in Unix milliseconds
	SendTSUs    int64 // send_ts, in Unix microseconds
}

// Columns are sensor_events' columns, in the order of Row's fields and of
// every insert.
var Columns = []string{"batch_id", "event_seq", "sensor", "region", "name_upper", "unit", "value", "value_scaled", "quality", "tags", "batch_ts", "send_ts"}

// AppendRows appends the rows a correct arm lands for prefilled batch b:
// the workload's own transform, from the derivations, for what needs the
// rows themselves (the ingest ceiling's inserts). Each row's Quality and
// Tags are its own.
func (k *Corpus) AppendRows(dst []Row, b uint64) []Row {
	region := ""
	if r := k.regionIndex(b); r >= 0 {
		region = k.regions[r]
	}
	for i := range k.c.EventsPerBatch {
		s := uint64(i)
		if !k.Keeps(b, s) {
			continue
		}
		row := Row{
			BatchID: b, EventSeq: uint16(i), Sensor: k.sensors[k.sensorIndex(b)], Region: region,
			NameUpper: ASCIIUpper(k.names[k.nameIndex(b, s)]), Unit: k.c.Units[k.unitIndex(b, s)],
			Value: k.value(b, s), BatchTSMs: k.batchTSMillis(b), SendTSUs: k.prefillSendTSMicros(b),
		}
		row.ValueScaled = ValueScaled(row.Value, int32(i))
		if q, ok := k.quality(b, s); ok {
			row.Quality = &q
		}
		row.Tags = make([]string, k.tagCount(b, s))
		for j := range row.Tags {
			row.Tags[j] = k.tags[k.tagIndex(b, s, uint64(j))]
		}
		dst = append(dst, row)
	}
	return dst
}
