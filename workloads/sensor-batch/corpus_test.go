package sensorbatch

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"spatec.dev/spatec/workloads/checksum"
)

// harness are the constants of the public reference harness's workload
// (spate-etl/benchmark, workload/workload.toml), which workload.cue
// declares too (cmd/spatec's corpus test checks the two agree): the golden
// values below are the harness's for these constants.
var harness = Constants{
	EventsPerBatch: 100,
	Sensors:        1024,
	Names:          32,
	Tags:           16,
	Units:          []string{"count", "bytes", "ms", "drop", "ratio", "celsius", "volts", "rpm"},
	BaseTSMillis:   1_772_000_000_000,
}

var harnessTransform = Transform{DropUnit: "drop", QualityFloor: 0.2}

func newCorpus(t testing.TB) *Corpus {
	t.Helper()
	k, err := New(harness, harnessTransform)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The bytes are the harness's: its golden corpus test pins the FNV-1a of the
// datums of batches 0..999 (sent at base+id µs) and of their Confluent
// framing with schema id 42 (sent at id µs), and their total size
// (HarnessGolden, which licenses the harness's dataset_version).
func TestDatumsAreTheHarnessBytes(t *testing.T) {
	want := HarnessGolden()
	g, err := newCorpus(t).Fingerprint(context.Background(), want.Batches)
	if err != nil {
		t.Fatal(err)
	}
	if g.DatumsFNV != want.DatumsFNV || g.DatumsBytes != want.DatumsBytes {
		t.Errorf("FNV-1a of the first 1000 datums is %s over %d bytes; the harness's is %s over %d", g.DatumsFNV, g.DatumsBytes, want.DatumsFNV, want.DatumsBytes)
	}
	if g.FramedFNV != want.FramedFNV {
		t.Errorf("FNV-1a of the first 1000 framed messages is %s; the harness's is %s", g.FramedFNV, want.FramedFNV)
	}

	// The fingerprint is FNV-1a as the harness takes it: its basis and
	// prime over a known input.
	if got := fmt.Sprintf("%016x", fnv1a(fnvOffset, []byte("a"))); got != "af63dc4c8601ec8c" {
		t.Errorf("FNV-1a of \"a\" is %s; want af63dc4c8601ec8c", got)
	}
}

// The expectation is the harness's: its golden test pins these sums over
// the first 1000 batches (send_ts_sum is spatec's own: in a drain,
// send_ts is a function of batch_id too, so it is checked as well).
func TestExpectationIsTheHarnessExpectation(t *testing.T) {
	want := HarnessGolden()
	g, err := newCorpus(t).Fingerprint(context.Background(), want.Batches)
	if err != nil {
		t.Fatal(err)
	}
	if g.Rows != want.Rows {
		t.Errorf("rows = %d; the harness expects %d", g.Rows, want.Rows)
	}
	for name, w := range want.Sums {
		if got := g.Sums[name]; got != w {
			t.Errorf("%s = %s; the harness expects %s", name, got, w)
		}
	}
	if len(g.Sums) != len(SumNames) || len(want.Sums) != len(SumNames)-1 {
		t.Errorf("%d sums, %d of them the harness's; want %d (%v), all but send_ts_sum the harness's", len(g.Sums), len(want.Sums), len(SumNames), SumNames)
	}
	if d := g.Differences(want); len(d) > 0 {
		t.Errorf("the corpus differs from the harness's: %v", d)
	}
}

// A corpus one constant away from the harness's is another corpus: its
// fingerprints say so, each where it moved.
func TestDifferencesNameWhatMoved(t *testing.T) {
	c := harness
	c.Names = 31
	k, err := New(c, harnessTransform)
	if err != nil {
		t.Fatal(err)
	}
	g, err := k.Fingerprint(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	d := strings.Join(g.Differences(HarnessGolden()), "; ")
	for _, moved := range []string{"the FNV-1a of the datums is", "the FNV-1a of the framed messages is", "the checksum's name_sum is"} {
		if !strings.Contains(d, moved) {
			t.Errorf("differences %q do not say %q", d, moved)
		}
	}
	if strings.Contains(d, "the rows expected") || strings.Contains(d, "value_sum is") {
		t.Errorf("differences %q name what did not move (a reading's name decides neither the rows nor the values)", d)
	}
}

// The fingerprint is the harness's (its golden values) and the server's
// (reinterpretAsUInt64 of the string and of its reverse).
func TestFingerprint(t *testing.T) {
	for s, want := range map[string]string{
		"":                 "0",
		"ms":               "57568",
		"METRIC_7":         "9557931003773166724",
		"metric_7":         "11872851856941630628",
		"sensor-1023":      "11861606880014931878",
		"region-3":         "11930833490185392805",
		"tag-15tag-0tag-1": "14456948040575913637",
	} {
		h, tl := checksum.Fingerprint(s)
		got := new(big.Int).Add(new(big.Int).SetUint64(h), new(big.Int).SetUint64(tl))
		if got.String() != want {
			t.Errorf("Fingerprint(%q) = %s; want %s", s, got, want)
		}
		ph, pt := checksum.Fingerprint(splitEvery(s, 3)...)
		if ph != h || pt != tl {
			t.Errorf("the fingerprint of %q in parts differs from the whole's", s)
		}
	}
}

func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}

// The fingerprint reads at most sixteen bytes, so it separates strings only
// as long as the corpus's strings are short enough, and ASCII (the server's
// reverse is byte-wise). Every string a column can hold is enumerated here:
// a constant that grew the alphabet past what the fingerprint separates
// fails this test, not a gate.
func TestFingerprintSeparatesTheCorpusStrings(t *testing.T) {
	k := newCorpus(t)
	enc := k.NewEncoder()
	strs := map[string]bool{"": true}
	for b := range max(k.c.Sensors, 64) {
		batch := enc.Batch(b, 0)
		strs[batch.Sensor] = true
		if batch.Region != nil {
			strs[*batch.Region] = true
		}
	}
	for b := range uint64(256) {
		for _, ev := range enc.Batch(b, 0).Events {
			strs[ev.Name] = true // what an arm that skipped the upper case writes
			strs[ASCIIUpper(ev.Name)] = true
			strs[ev.Unit] = true
			strs[strings.Join(ev.Tags, "")] = true
		}
	}
	seen := map[[2]uint64]string{}
	for s := range strs {
		for i := range len(s) {
			if s[i] >= 0x80 {
				t.Fatalf("the corpus holds %q, which is not ASCII", s)
			}
		}
		h, tl := checksum.Fingerprint(s)
		if other, ok := seen[[2]uint64{h, tl}]; ok {
			t.Fatalf("%q and %q share a fingerprint", s, other)
		}
		seen[[2]uint64{h, tl}] = s
	}
}

// The expectation agrees with an independent flatten: the datums decoded
// with the Avro library, transformed as the workload specifies, summed from
// the decoded strings. A mistake in the expectation's shortcuts (the tables
// of fingerprints, the index functions) cannot agree with it by accident.
func TestExpectationAgreesWithADecodedFlatten(t *testing.T) {
	k := newCorpus(t)
	const batches = 300
	exp, err := k.Expect(context.Background(), batches, nil)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(Schema)
	enc := k.NewEncoder()
	sums := map[string]*big.Int{}
	for _, n := range SumNames {
		sums[n] = new(big.Int)
	}
	add := func(name string, v int64) { sums[name].Add(sums[name], big.NewInt(v)) }
	addFP := func(name, s string) {
		h, tl := checksum.Fingerprint(s)
		sums[name].Add(sums[name], new(big.Int).SetUint64(h))
		sums[name].Add(sums[name], new(big.Int).SetUint64(tl))
	}
	var rows uint64
	for b := range uint64(batches) {
		msg, err := enc.AppendMessage(nil, 7, b)
		if err != nil {
			t.Fatal(err)
		}
		var got Batch
		if err := avro.Unmarshal(schema, msg[FrameBytes:], &got); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		region := ""
		if got.Region != nil {
			region = *got.Region
		}
		for _, ev := range got.Events {
			if ev.Unit == harnessTransform.DropUnit || ev.Quality != nil && *ev.Quality < harnessTransform.QualityFloor {
				continue
			}
			rows++
			add(SumValue, ev.Value)
			add(SumValueScaled, ValueScaled(ev.Value, ev.Seq))
			addFP(SumSensor, got.Sensor)
			addFP(SumRegion, region)
			addFP(SumName, ASCIIUpper(ev.Name))
			addFP(SumUnit, ev.Unit)
			add(SumTagCount, int64(len(ev.Tags)))
			addFP(SumTag, strings.Join(ev.Tags, ""))
			add(SumBatchTS, got.BatchTSMs)
			add(SumSendTS, got.SendTSUs)
			if ev.Quality == nil {
				add(SumNullQuality, 1)
			}
		}
	}
	if rows != exp.Rows {
		t.Errorf("the flatten keeps %d rows; the expectation says %d", rows, exp.Rows)
	}
	for _, n := range SumNames {
		if sums[n].Cmp(exp.Sums[n]) != 0 {
			t.Errorf("%s: the flatten sums %s; the expectation says %s", n, sums[n], exp.Sums[n])
		}
	}
}

// A wrong transform misses the expectation: each of these would land a row
// count that matches, and every one moves a sum.
func TestWrongTransformsMissTheExpectation(t *testing.T) {
	k := newCorpus(t)
	exp, err := k.Expect(context.Background(), 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc := k.NewEncoder()
	wrong := map[string]func(b Batch, ev Event) (string, *big.Int){
		"name not upper-cased": func(b Batch, ev Event) (string, *big.Int) { return SumName, fp(ev.Name) },
		"tags dropped":         func(b Batch, ev Event) (string, *big.Int) { return SumTag, fp("") },
		"null region not coalesced": func(b Batch, ev Event) (string, *big.Int) {
			return SumRegion, fp(fmt.Sprintf("region-%d", b.BatchID%7))
		},
		"batch_ts in seconds": func(b Batch, ev Event) (string, *big.Int) { return SumBatchTS, big.NewInt(b.BatchTSMs / 1000) },
	}
	for what, f := range wrong {
		var sum *big.Int
		var name string
		for id := range uint64(500) {
			b := *enc.Batch(id, k.prefillSendTSMicros(id))
			for _, ev := range b.Events {
				if !k.Keeps(id, uint64(ev.Seq)) {
					continue
				}
				n, v := f(b, ev)
				if sum == nil {
					sum, name = new(big.Int), n
				}
				sum.Add(sum, v)
			}
		}
		if sum.Cmp(exp.Sums[name]) == 0 {
			t.Errorf("%s: %s still equals the expectation", what, name)
		}
	}
}

func fp(s string) *big.Int {
	h, t := checksum.Fingerprint(s)
	return new(big.Int).Add(new(big.Int).SetUint64(h), new(big.Int).SetUint64(t))
}

func TestConstantsAreChecked(t *testing.T) {
	_, err := New(Constants{EventsPerBatch: 0, Units: []string{"a"}}, Transform{DropUnit: "b"})
	if err == nil {
		t.Fatal("bad constants accepted")
	}
	for _, want := range []string{"eventsPerBatch is 0", "sensors is 0", "names is 0", "tags is 0", `dropUnit "b" is not one of the units`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	k := newCorpus(b)
	enc := k.NewEncoder()
	var buf []byte
	b.ReportAllocs()
	for i := range b.N {
		buf, _ = enc.AppendMessage(buf[:0], 1, uint64(i))
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkExpect(b *testing.B) {
	k := newCorpus(b)
	for b.Loop() {
		if _, err := k.Expect(context.Background(), 10_000, nil); err != nil {
			b.Fatal(err)
		}
	}
}
