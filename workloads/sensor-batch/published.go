package sensorbatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// The public reference harness (spate-etl/benchmark) labels its corpus with
// a dataset_version it derives by hashing its own sources (harness/build.rs:
// the parsed values of workload/workload.toml, the bytes of the Avro schema,
// the normalised DDL and the marked generator region of
// harness/src/corpus.rs), which spatec cannot recompute. What it publishes
// of the corpus itself is the fingerprints its golden test pins beside that
// label (harness/tests/golden_corpus.rs at 9d69d35): the bytes and the
// closed-form expectation of the first 1000 batches.
//
// The label covers the corpus's definition, not its size: the number of
// batches drained is a flag of the harness's (--batches, 1,500,000 by
// default), recorded as variant.batches beside the label, and the
// harness's site keeps records of different sizes apart by it. Its 30
// published records are all of 1,500,000 batches.
//
// spatec carries the harness's label only for the workload declared beside
// this file as it is now (DatasetVersion), and only while its corpus
// reproduces those fingerprints: the golden tests beside this file are the
// licence. They fail when the generator or the workload's declaration
// drifts, and the label goes with the pair.
const (
	// HarnessDatasetVersion is the reference harness's dataset_version for
	// its corpus, as its golden test pins it and its published records
	// carry it.
	HarnessDatasetVersion = "d2-60d7e5bb2a82"
	// DatasetVersion is spatec's dataset_version (workloads.Version) of the
	// sensor-batch workload whose corpus the golden tests find to be the
	// harness's: the one spatec dataset the harness's label names.
	DatasetVersion = "sensor-batch@1c12224f4f7f"
)

// HarnessLabel returns the reference harness's dataset_version for a spatec
// dataset version, and whether the harness has one: only DatasetVersion,
// the corpus the golden tests license, is the harness's corpus.
func HarnessLabel(spatecVersion string) (string, bool) {
	if spatecVersion == DatasetVersion {
		return HarnessDatasetVersion, true
	}
	return "", false
}

// SpatecLabel returns spatec's dataset_version for one of the reference
// harness's, and whether spatec generates that corpus: the converse of
// HarnessLabel.
func SpatecLabel(harnessVersion string) (string, bool) {
	if harnessVersion == HarnessDatasetVersion {
		return DatasetVersion, true
	}
	return "", false
}

// Golden is what the reference harness's golden corpus test pins of the
// first Batches batches of its corpus.
type Golden struct {
	Batches uint64
	// DatumsFNV is the FNV-1a (hex) of the Avro datums of batches 0 to
	// Batches-1 in order, batch b sent at the prefill's base+b µs, and
	// DatumsBytes their total size.
	DatumsFNV   string
	DatumsBytes uint64
	// FramedFNV is the FNV-1a (hex) of the same batches framed for a
	// registry with schema id 42, batch b sent at b µs.
	FramedFNV string
	// Rows and Sums are the closed-form expectation over those batches,
	// the sums by name as decimal strings; the harness pins ten of them.
	Rows uint64
	Sums map[string]string
}

// HarnessGolden is the reference harness's golden fingerprints
// (harness/tests/golden_corpus.rs at 9d69d35), which license
// HarnessDatasetVersion.
func HarnessGolden() Golden {
	return Golden{
		Batches:     1000,
		DatumsFNV:   "5c66e4254fe9b472",
		DatumsBytes: 4_051_124,
		FramedFNV:   "5e3ced4c090971ea",
		Rows:        73_500,
		Sums: map[string]string{
			SumValue:       "36712213045500",
			SumValueScaled: "1903970758089327",
			SumSensor:      "862547254290276801415122",
			SumRegion:      "789224923606139885762498",
			SumName:        "650904861039966432802372",
			SumUnit:        "635040811622225011500",
			SumTagCount:    "105000",
			SumTag:         "483030864161340461867712",
			SumBatchTS:     "130242000036711750",
			SumNullQuality: "17500",
		},
	}
}

// goldenSchemaID frames the batches of Golden.FramedFNV, as the harness's
// golden test does.
const goldenSchemaID = 42

// Fingerprint takes of k's first batches what Golden holds, the way the
// harness's golden test takes it.
func (k *Corpus) Fingerprint(ctx context.Context, batches uint64) (Golden, error) {
	g := Golden{Batches: batches, Sums: map[string]string{}}
	enc := k.NewEncoder()
	datums, framed := uint64(fnvOffset), uint64(fnvOffset)
	var buf []byte
	var err error
	for b := range batches {
		if buf, err = enc.AppendDatum(buf[:0], b, k.prefillSendTSMicros(b)); err != nil {
			return g, err
		}
		g.DatumsBytes += uint64(len(buf))
		datums = fnv1a(datums, buf)
		buf, _ = enc.frame.AppendEncode(buf[:0], goldenSchemaID, nil) // never fails
		if buf, err = enc.AppendDatum(buf, b, int64(b)); err != nil {
			return g, err
		}
		framed = fnv1a(framed, buf)
	}
	g.DatumsFNV, g.FramedFNV = fmt.Sprintf("%016x", datums), fmt.Sprintf("%016x", framed)
	exp, err := k.Expect(ctx, batches, nil)
	if err != nil {
		return g, fmt.Errorf("fingerprinting the first %d batches: %w", batches, err)
	}
	g.Rows = exp.Rows
	for name, v := range exp.Sums {
		g.Sums[name] = v.String()
	}
	return g, nil
}

// Differences says, one line each, where g differs from want; none means g
// is want's corpus. A sum want does not pin is not compared.
func (g Golden) Differences(want Golden) []string {
	var out []string
	differ := func(what string, got, want any) {
		if got != want {
			out = append(out, fmt.Sprintf("%s is %v; the harness's is %v", what, got, want))
		}
	}
	differ("the number of batches fingerprinted", g.Batches, want.Batches)
	differ("the FNV-1a of the datums", g.DatumsFNV, want.DatumsFNV)
	differ("the datums' size in bytes", g.DatumsBytes, want.DatumsBytes)
	differ("the FNV-1a of the framed messages", g.FramedFNV, want.FramedFNV)
	differ("the rows expected", g.Rows, want.Rows)
	for _, name := range slices.Sorted(maps.Keys(want.Sums)) {
		differ("the checksum's "+name, g.Sums[name], want.Sums[name])
	}
	return out
}

// fnvOffset is FNV-1a's offset basis.
const fnvOffset = 0xcbf29ce484222325

// fnv1a continues the 64-bit FNV-1a hash h over b: the fingerprint the
// harness's golden test takes, dependency-free so that it never moves.
func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return h
}
