package main

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"spatec.dev/spatec/compiler"
	"spatec.dev/spatec/exec/chstore"
	"spatec.dev/spatec/schema"
	"spatec.dev/spatec/workloads"
	"spatec.dev/spatec/workloads/checksum"
	sensorbatch "spatec.dev/spatec/workloads/sensor-batch"
)

// fixedSchema serves one schema under one id, as a registry would.
type fixedSchema struct {
	id     int
	schema avro.Schema
}

func (f fixedSchema) byID(_ context.Context, id int) (avro.Schema, error) {
	if id != f.id {
		return nil, &unknownID{id}
	}
	return f.schema, nil
}

type unknownID struct{ id int }

func (u *unknownID) Error() string { return fmt.Sprintf("no schema with id %d", u.id) }

// benchWorkload is the sensor-batch workload as the tree declares it.
func benchWorkload(t *testing.T) schema.Workload {
	t.Helper()
	tree, err := compiler.Load(compiler.Options{Dir: "../.."})
	if err != nil {
		t.Fatal(err)
	}
	wl, err := tree.HostedWorkload("bench-96c", "sensor-batch")
	if err != nil {
		t.Fatal(err)
	}
	return wl
}

// sums are the checksum's sums over rows, computed from the rows the arm
// made, as the sink would compute them.
func sums(r *chstore.SensorRows) (uint64, map[string]*big.Int) {
	out := map[string]*big.Int{}
	for _, n := range sensorbatch.SumNames {
		out[n] = new(big.Int)
	}
	add := func(n string, v int64) { out[n].Add(out[n], big.NewInt(v)) }
	fp := func(n, s string) {
		h, t := checksum.Fingerprint(s)
		out[n].Add(out[n], new(big.Int).SetUint64(h))
		out[n].Add(out[n], new(big.Int).SetUint64(t))
	}
	for i := range r.Len() {
		add(sensorbatch.SumValue, r.Value[i])
		add(sensorbatch.SumValueScaled, r.ValueScaled[i])
		fp(sensorbatch.SumSensor, r.Sensor[i])
		fp(sensorbatch.SumRegion, r.Region[i])
		fp(sensorbatch.SumName, r.NameUpper[i])
		fp(sensorbatch.SumUnit, r.Unit[i])
		add(sensorbatch.SumTagCount, int64(len(r.Tags[i])))
		fp(sensorbatch.SumTag, strings.Join(r.Tags[i], ""))
		add(sensorbatch.SumBatchTS, r.BatchTSMs[i])
		add(sensorbatch.SumSendTS, r.SendTSUs[i])
		if r.Quality[i] == nil {
			add(sensorbatch.SumNullQuality, 1)
		}
	}
	return uint64(r.Len()), out
}

// drainThroughTheArm prefills batches messages of the workload as the wire
// has them and puts each through the arm's decode, flatten and transform.
func drainThroughTheArm(t *testing.T, wl schema.Workload, batches int64, tr transform) *chstore.SensorRows {
	t.Helper()
	ds, err := workloads.Open(wl, batches, 7)
	if err != nil {
		t.Fatal(err)
	}
	s := &sensorRows{schemas: fixedSchema{7, avro.MustParse(wl.Avro.Schema)}, t: tr}
	w := ds.NewWriter()
	var msg []byte
	for i := range batches {
		var keyLen int
		if msg, keyLen, err = w.AppendMessage(msg[:0], i); err != nil {
			t.Fatal(err)
		}
		if _, err := s.add(context.Background(), msg[keyLen:]); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	return &s.rows
}

// The arm's transform lands exactly the rows and sums the workload's closed
// form says, and each step left out (a filter, the coalesce, the upper
// case) misses them.
func TestTheArmsTransformMeetsTheClosedForm(t *testing.T) {
	wl := benchWorkload(t)
	const batches = 400
	exp, err := workloads.Expect(context.Background(), wl, batches, nil)
	if err != nil {
		t.Fatal(err)
	}
	floor := *wl.Transform.QualityFloor
	right := transform{dropUnit: wl.Transform.DropUnit, qualityFloor: floor}
	rows, got := sums(drainThroughTheArm(t, wl, batches, right))
	if rows != exp.Rows {
		t.Errorf("the arm lands %d rows; the closed form says %d", rows, exp.Rows)
	}
	for name, want := range exp.Sums {
		if got[name].Cmp(want) != 0 {
			t.Errorf("%s: the arm's rows sum to %s; the closed form says %s", name, got[name], want)
		}
	}

	for what, tr := range map[string]transform{
		"the drop unit kept":             {dropUnit: "no such unit", qualityFloor: floor},
		"the quality floor not applied":  {dropUnit: wl.Transform.DropUnit, qualityFloor: 0},
		"the name not upper-cased":       {dropUnit: wl.Transform.DropUnit, qualityFloor: floor, fault: "skip-upper"},
		"a quality floor of another run": {dropUnit: wl.Transform.DropUnit, qualityFloor: floor + 0.1},
	} {
		rows, got := sums(drainThroughTheArm(t, wl, batches, tr))
		same := rows == exp.Rows
		for name, want := range exp.Sums {
			same = same && got[name].Cmp(want) == 0
		}
		if same {
			t.Errorf("%s: the arm's rows still meet the closed form", what)
		}
	}
}

func TestASCIIUpperLeavesOtherLettersAlone(t *testing.T) {
	for in, want := range map[string]string{"metric_7": "METRIC_7", "straße": "STRAßE", "ÄBC": "ÄBC", "": ""} {
		if got := asciiUpper(in); got != want {
			t.Errorf("asciiUpper(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestAFrameWithAnUnknownSchemaIsAnError(t *testing.T) {
	wl := benchWorkload(t)
	s := &sensorRows{schemas: fixedSchema{7, avro.MustParse(wl.Avro.Schema)}}
	if _, err := s.add(context.Background(), []byte{0, 0, 0, 0, 9, 1, 2}); err == nil || !strings.Contains(err.Error(), "no schema with id") {
		t.Fatalf("a frame naming schema 9: %v", err)
	}
	if _, err := s.add(context.Background(), []byte{1, 2}); err == nil || !strings.Contains(err.Error(), "Confluent frame") {
		t.Fatalf("an unframed message: %v", err)
	}
}
