package jsonrows

import (
	"bytes"
	"context"
	"hash/crc64"
	"math/big"
	"strings"
	"testing"

	"spatec.dev/spatec/workloads/checksum"
)

func testSpec() Spec {
	return Spec{Dataset: "v1", Messages: 5000, EventsPerMessage: 3, MessageBytes: 512}
}

func TestMessagesAreDeterministicAndSized(t *testing.T) {
	s := testSpec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	copyOfSpec := Spec{Dataset: "v1", Messages: 5000, EventsPerMessage: 3, MessageBytes: 512}
	for _, i := range []int64{0, 1, 2, 999, 4998, 4999} {
		a, err := s.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		b, err := copyOfSpec.AppendMessage([]byte("prefix"), i)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b[len("prefix"):]) {
			t.Fatalf("message %d differs between two derivations:\n%s\n%s", i, a, b)
		}
		if len(a) != s.MessageBytes {
			t.Fatalf("message %d is %d bytes, want %d", i, len(a), s.MessageBytes)
		}
		if n := bytes.Count(a, []byte("\n")); n != s.EventsPerMessage {
			t.Fatalf("message %d has %d lines, want %d", i, n, s.EventsPerMessage)
		}
	}
}

func TestEveryMessageHasTheDeclaredSizeAtTheWidestIDs(t *testing.T) {
	// The last messages of a large dataset carry the widest ids and
	// timestamps: the minimum size must still hold them.
	s := Spec{Dataset: "v1", Messages: 1 << 40, EventsPerMessage: 2}
	s.MessageBytes = s.MinMessageBytes()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := s.Messages - 2000; i < s.Messages; i++ {
		m, err := s.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != s.MessageBytes {
			t.Fatalf("message %d is %d bytes, want %d", i, len(m), s.MessageBytes)
		}
	}
}

func TestIDsAreDistinctAndDecodeRoundTrips(t *testing.T) {
	s := testSpec()
	seen := make(map[uint64]bool, s.Rows())
	var decoded, derived []Event
	for i := int64(0); i < s.Messages; i++ {
		m, err := s.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err = AppendDecoded(decoded[:0], m)
		if err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, m)
		}
		derived, err = s.AppendEvents(derived[:0], i)
		if err != nil {
			t.Fatal(err)
		}
		if len(decoded) != s.EventsPerMessage || len(derived) != s.EventsPerMessage {
			t.Fatalf("message %d: decoded %d events, derived %d, want %d", i, len(decoded), len(derived), s.EventsPerMessage)
		}
		for j := range decoded {
			if decoded[j] != derived[j] {
				t.Fatalf("message %d event %d: decoded %+v, derived %+v", i, j, decoded[j], derived[j])
			}
			id := decoded[j].ID
			if want := uint64(i)*uint64(s.EventsPerMessage) + uint64(j); id != want {
				t.Fatalf("message %d event %d has id %d, want %d", i, j, id, want)
			}
			if seen[id] {
				t.Fatalf("id %d appears twice", id)
			}
			seen[id] = true
			if decoded[j].TS < Epoch || decoded[j].UserID >= UserIDs {
				t.Fatalf("event %d has fields out of range: %+v", id, decoded[j])
			}
		}
	}
	if int64(len(seen)) != s.Rows() {
		t.Fatalf("saw %d distinct ids, want %d", len(seen), s.Rows())
	}
}

func TestDatasetTagChangesContent(t *testing.T) {
	a := testSpec()
	b := testSpec()
	b.Dataset = "v2"
	ma, _ := a.Message(7)
	mb, _ := b.Message(7)
	if bytes.Equal(ma, mb) {
		t.Fatalf("datasets v1 and v2 produce the same message 7: %s", ma)
	}
}

// TestDatasetV1IsPinned guards the published dataset: topics prefilled by an
// earlier build are reused only if the generator still produces the same
// bytes. A change to the generator needs a new dataset tag, not a new value
// here.
func TestDatasetV1IsPinned(t *testing.T) {
	s := Spec{Dataset: "v1", Messages: 1000, EventsPerMessage: 1, MessageBytes: 256}
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	var buf []byte
	for i := int64(0); i < s.Messages; i++ {
		var err error
		buf, err = s.AppendMessage(buf[:0], i)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(buf)
	}
	const want = 0x1103af9d91f4f2a6
	if got := h.Sum64(); got != want {
		t.Fatalf("dataset v1 checksum is %#x, want %#x", got, uint64(want))
	}
}

func TestAppendMessageDoesNotAllocate(t *testing.T) {
	s := testSpec()
	buf := make([]byte, 0, s.MessageBytes)
	allocs := testing.AllocsPerRun(100, func() {
		buf, _ = s.AppendMessage(buf[:0], 1234)
	})
	if allocs != 0 {
		t.Fatalf("AppendMessage allocated %.1f times per call, want 0", allocs)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Spec{Messages: -1, EventsPerMessage: 0}.Validate()
	if err == nil {
		t.Fatal("an empty spec validated")
	}
	for _, want := range []string{"dataset tag is empty", "messages is -1", "events per message is 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	huge := Spec{Dataset: "v1", Messages: 1 << 50, EventsPerMessage: 1, MessageBytes: 1000}
	if err := huge.Validate(); err == nil || !strings.Contains(err.Error(), "run past the last DateTime second") {
		t.Fatalf("a dataset beyond 2106: got %v", err)
	}
	small := Spec{Dataset: "v1", Messages: 10, EventsPerMessage: 4, MessageBytes: 100}
	err = small.Validate()
	if err == nil || !strings.Contains(err.Error(), "message size 100 bytes is too small for 4 events") {
		t.Fatalf("undersized spec: got %v", err)
	}
}

func TestMessageOutsideDatasetIsAnError(t *testing.T) {
	s := testSpec()
	if _, err := s.Message(s.Messages); err == nil || !strings.Contains(err.Error(), "outside the dataset's 5000 messages") {
		t.Fatalf("message past the end: got %v", err)
	}
}

func TestDecodeRejectsMalformedEvents(t *testing.T) {
	_, err := AppendDecoded(nil, []byte("{\"id\":1}\n{\"id\":\"x\"}\n"))
	if err == nil || !strings.Contains(err.Error(), "decoding event 1") {
		t.Fatalf("malformed second event: got %v", err)
	}
}

func BenchmarkAppendMessage(b *testing.B) {
	s := Spec{Dataset: "v1", Messages: 1 << 30, EventsPerMessage: 1, MessageBytes: 256}
	buf := make([]byte, 0, s.MessageBytes)
	b.SetBytes(int64(s.MessageBytes))
	for i := 0; b.Loop(); i++ {
		buf, _ = s.AppendMessage(buf[:0], int64(i))
	}
}

func BenchmarkAppendDecoded(b *testing.B) {
	s := Spec{Dataset: "v1", Messages: 1 << 20, EventsPerMessage: 1, MessageBytes: 256}
	m, _ := s.Message(12345)
	var evs []Event
	b.SetBytes(int64(len(m)))
	for b.Loop() {
		evs, _ = AppendDecoded(evs[:0], m)
	}
}

func TestLettersMapsEveryByteIntoTheAlphabet(t *testing.T) {
	for b := 0; b < 256; b++ {
		// Put b in every byte position, next to neighbours that would
		// carry into it if the lanes overlapped.
		for pos := 0; pos < 8; pos++ {
			x := uint64(0xffffffffffffffff)&^(0xff<<(8*pos)) | uint64(b)<<(8*pos)
			got := byte(letters(x) >> (8 * pos))
			if want := 'a' + byte(b*26/256); got != want {
				t.Fatalf("byte %#x at position %d maps to %q, want %q", b, pos, got, want)
			}
		}
	}
}

// The expectation agrees with the rows a reader decodes from the messages,
// summed from the decoded values.
func TestExpectationAgreesWithTheDecodedRows(t *testing.T) {
	spec := Spec{Dataset: "v1", Messages: 300, EventsPerMessage: 3, MessageBytes: 400}
	exp, err := spec.Expect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]*big.Int{}
	for _, n := range SumNames {
		sums[n] = new(big.Int)
	}
	add := func(n string, v *big.Int) { sums[n].Add(sums[n], v) }
	fp := func(s string) *big.Int {
		h, tl := checksum.Fingerprint(s)
		return new(big.Int).Add(new(big.Int).SetUint64(h), new(big.Int).SetUint64(tl))
	}
	var rows uint64
	for i := range spec.Messages {
		msg, err := spec.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := AppendDecoded(nil, msg)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			rows++
			add(SumValue, big.NewInt(e.Value))
			add(SumUserID, big.NewInt(int64(e.UserID)))
			add(SumTS, big.NewInt(int64(e.TS)))
			add(SumKind, fp(e.Kind))
			add(SumPayload, fp(e.Payload))
		}
	}
	if rows != exp.Rows {
		t.Errorf("decoded %d rows; the expectation says %d", rows, exp.Rows)
	}
	for _, n := range SumNames {
		if sums[n].Cmp(exp.Sums[n]) != 0 {
			t.Errorf("%s: decoded rows sum to %s; the expectation says %s", n, sums[n], exp.Sums[n])
		}
	}
	if exp.Sums[SumValue].Sign() == 0 {
		t.Error("the values sum to 0: the signed sum is not exercised")
	}
}
