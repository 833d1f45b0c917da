// Package workloads turns a plan's workload into what the executor needs
// of it: the dataset to prefill, the expectation a correct arm meets (rows
// and checksum sums, computed without reading what any arm wrote), and the
// dataset's version. It dispatches on the workload's generator to the
// generator packages beside it (sensor-batch, json-rows), which know no
// entrant.
package workloads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"

	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads/checksum"
	jsonrows "spatec.dev/spatec/workloads/json-rows"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// Dataset is the first Messages messages of a workload's corpus, as they
// go on the wire: message i's key and value are pure functions of i.
type Dataset interface {
	// Messages is the dataset's size.
	Messages() int64
	// NewWriter returns a writer of the dataset's messages; each goroutine
	// needs its own.
	NewWriter() Writer
	// String names the dataset in messages.
	String() string
}

// Writer writes a dataset's messages.
type Writer interface {
	// AppendMessage appends message i's key and then its value to dst,
	// and returns dst and the key's length.
	AppendMessage(dst []byte, i int64) (out []byte, keyLen int, err error)
}

// Open returns the first messages messages of w's corpus. An
// avro-confluent workload's messages carry schemaID, the id the
// environment's registry gave its schema.
func Open(w schema.Workload, messages int64, schemaID uint32) (Dataset, error) {
	switch w.Generator.Kind {
	case "sensor-batch":
		k, err := sensorBatch(w)
		if err != nil {
			return nil, err
		}
		return &sensorBatchDataset{k: k, messages: messages, schemaID: schemaID}, nil
	case "json-rows":
		return JSONRows(jsonRows(w, messages))
	}
	return nil, fmt.Errorf("workload %s: no generator of kind %q", w.Name, w.Generator.Kind)
}

// JSONRows is the dataset of a json-rows corpus spec, each message keyed
// by its index.
func JSONRows(spec jsonrows.Spec) (Dataset, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return jsonRowsDataset{spec}, nil
}

// Expect computes what a correct arm lands for the first messages messages
// of w's corpus. Every sum of w's checksum must be one the generator
// computes; it returns those only. progress, when not nil, is called with
// the messages done so far.
func Expect(ctx context.Context, w schema.Workload, messages int64, progress func(done int64)) (checksum.Expected, error) {
	if err := checkSums(w); err != nil {
		return checksum.Expected{}, err
	}
	var exp checksum.Expected
	var err error
	switch w.Generator.Kind {
	case "sensor-batch":
		var k *sensorbatch.Corpus
		if k, err = sensorBatch(w); err != nil {
			return exp, err
		}
		var report func(uint64)
		if progress != nil {
			report = func(d uint64) { progress(int64(d)) }
		}
		exp, err = k.Expect(ctx, uint64(messages), report)
	case "json-rows":
		exp, err = jsonRows(w, messages).Expect(ctx, progress)
	default:
		return exp, fmt.Errorf("workload %s: no generator of kind %q", w.Name, w.Generator.Kind)
	}
	if err != nil {
		return exp, fmt.Errorf("computing what %d messages of %s land: %w", messages, w.Name, err)
	}
	maps.DeleteFunc(exp.Sums, func(name string, _ *big.Int) bool { _, ok := w.Checksum[name]; return !ok })
	return exp, nil
}

// MessageBytes is the total size of the first messages messages of w's
// corpus as they go on the wire. progress, when not nil, is called with
// the messages done so far.
func MessageBytes(ctx context.Context, w schema.Workload, messages int64, progress func(done int64)) (uint64, error) {
	switch w.Generator.Kind {
	case "sensor-batch":
		k, err := sensorBatch(w)
		if err != nil {
			return 0, err
		}
		var report func(uint64)
		if progress != nil {
			report = func(d uint64) { progress(int64(d)) }
		}
		return k.MessageBytes(ctx, uint64(messages), report)
	case "json-rows":
		if progress != nil {
			progress(messages)
		}
		return uint64(messages) * uint64(w.Generator.MessageBytes), nil
	}
	return 0, fmt.Errorf("workload %s: no generator of kind %q", w.Name, w.Generator.Kind)
}

// checkSums refuses a checksum whose sums the generator does not compute:
// a gate could not compare them with anything.
func checkSums(w schema.Workload) error {
	var computed []string
	switch w.Generator.Kind {
	case "sensor-batch":
		computed = sensorbatch.SumNames
	case "json-rows":
		computed = jsonrows.SumNames
	}
	var unknown []string
	for name := range w.Checksum {
		if !slices.Contains(computed, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("workload %s: checksum %s: the %s generator computes no such sum (it computes %s)",
			w.Name, strings.Join(unknown, ", "), w.Generator.Kind, strings.Join(computed, ", "))
	}
	return nil
}

// Version names the dataset: the workload's name and a digest of what
// decides its bytes and its rows (the generator's constants, the
// transform's parameters, the Avro schema's canonical form, the table's
// columns in order, the checksum's sums) and of the generator's own output
// for a sample of messages, so that a change to the arithmetic moves it
// too. Comments, docs and the column types an environment's ClickHouse
// needs do not: the environment's digest covers those.
func Version(w schema.Workload) (string, error) {
	h := sha256.New()
	write := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("marshalling a workload for its version: %v", err)) // plain data
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	write(w.Format)
	write(w.Generator)
	write(w.Transform)
	if w.Avro != nil {
		s, err := avro.Parse(w.Avro.Schema)
		if err != nil {
			return "", fmt.Errorf("workload %s: parsing its Avro schema: %w", w.Name, err)
		}
		write(s.String()) // the parsing canonical form: docs stripped
	}
	write(w.Table.Columns)
	write(w.Table.Identity)
	sums := slices.Sorted(maps.Keys(w.Checksum))
	for _, name := range sums {
		write([]string{name, w.Checksum[name].Kind})
	}
	if err := writeSample(h, w); err != nil {
		return "", err
	}
	return w.Name + "@" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// sampleAt are the messages whose bytes go into the version: the first
// ones, and some far out, where arithmetic that wraps or overflows would
// differ.
var sampleAt = []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 1 << 20, 1<<20 + 1, 1 << 30, 1<<30 + 7}

func writeSample(h hash.Hash, w schema.Workload) error {
	d, err := Open(w, 1<<31, 1)
	if err != nil {
		return fmt.Errorf("workload %s: %w", w.Name, err)
	}
	wr := d.NewWriter()
	var buf []byte
	for _, i := range sampleAt {
		if buf, _, err = wr.AppendMessage(buf[:0], i); err != nil {
			return fmt.Errorf("workload %s: generating message %d for its version: %w", w.Name, i, err)
		}
		h.Write([]byte(strconv.Itoa(len(buf))))
		h.Write(buf)
	}
	return nil
}

// SensorBatch is the generator of a sensor-batch workload.
func SensorBatch(w schema.Workload) (*sensorbatch.Corpus, error) { return sensorBatch(w) }

// JSONRowsSpec is the spec of the first messages messages of a json-rows
// workload.
func JSONRowsSpec(w schema.Workload, messages int64) jsonrows.Spec { return jsonRows(w, messages) }

func sensorBatch(w schema.Workload) (*sensorbatch.Corpus, error) {
	g := w.Generator
	t := sensorbatch.Transform{DropUnit: w.Transform.DropUnit}
	if w.Transform.QualityFloor != nil {
		t.QualityFloor = *w.Transform.QualityFloor
	}
	k, err := sensorbatch.New(sensorbatch.Constants{
		EventsPerBatch: g.EventsPerBatch, Sensors: g.Sensors, Names: g.Names, Tags: g.Tags,
		Units: g.Units, BaseTSMillis: g.BaseTSMillis,
	}, t)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	return k, nil
}

func jsonRows(w schema.Workload, messages int64) jsonrows.Spec {
	g := w.Generator
	return jsonrows.Spec{Dataset: g.Dataset, Messages: messages, EventsPerMessage: g.EventsPerMessage, MessageBytes: g.MessageBytes}
}

type sensorBatchDataset struct {
	k        *sensorbatch.Corpus
	messages int64
	schemaID uint32
}

func (d *sensorBatchDataset) Messages() int64 { return d.messages }

func (d *sensorBatchDataset) String() string {
	c := d.k.Constants()
	return fmt.Sprintf("%d sensor batches of %d readings, framed with schema id %d", d.messages, c.EventsPerBatch, d.schemaID)
}

func (d *sensorBatchDataset) NewWriter() Writer {
	return &sensorBatchWriter{d: d, enc: d.k.NewEncoder()}
}

type sensorBatchWriter struct {
	d   *sensorBatchDataset
	enc *sensorbatch.Encoder
}

func (w *sensorBatchWriter) AppendMessage(dst []byte, i int64) ([]byte, int, error) {
	start := len(dst)
	dst = append(dst, w.d.k.Key(uint64(i))...)
	keyLen := len(dst) - start
	dst, err := w.enc.AppendMessage(dst, w.d.schemaID, uint64(i))
	return dst, keyLen, err
}

type jsonRowsDataset struct{ spec jsonrows.Spec }

func (d jsonRowsDataset) Messages() int64 { return d.spec.Messages }

func (d jsonRowsDataset) String() string {
	s := d.spec
	return fmt.Sprintf("%d messages of dataset %q (%d bytes, %d events each)", s.Messages, s.Dataset, s.MessageBytes, s.EventsPerMessage)
}

func (d jsonRowsDataset) NewWriter() Writer { return jsonRowsWriter(d.spec) }

type jsonRowsWriter jsonrows.Spec

// AppendMessage writes message i under its index as its key.
func (w jsonRowsWriter) AppendMessage(dst []byte, i int64) ([]byte, int, error) {
	start := len(dst)
	dst = strconv.AppendInt(dst, i, 10)
	keyLen := len(dst) - start
	dst, err := jsonrows.Spec(w).AppendMessage(dst, i)
	return dst, keyLen, err
}
