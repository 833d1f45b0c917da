// Package jsonrows is the json-rows workload's generator: spatec's own
// pass-through dataset of JSON rows, kept beside the benchmark's
// sensor-batch workload for systems (and ClickHouse versions) that cannot
// decode Avro, and for the fixtures without a schema registry.
//
// Message i of a dataset is a pure function of the dataset tag and i, so
// "the first N messages" names one exact dataset on every host and every
// run: a prefilled topic can be checked against the plan, and the rows an
// arm lands in ClickHouse can be counted against N without keeping a copy.
//
// A message is newline-delimited JSON (one object per event, each line
// ending in '\n'), the shape that JSONEachRow readers, Kafka Connect and
// stream processors all accept. Each message is padded to exactly
// Spec.MessageBytes bytes through its events' payload fields, so the
// declared message size is the size on the wire.
//
// Event j of message i has id i*EventsPerMessage+j; ids are the key the
// harness counts distinct rows by.
package jsonrows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Epoch is the timestamp (Unix seconds) of event 0. Timestamps advance one
// second every EventsPerSecond events, at second resolution because the
// oldest supported ClickHouse (18.16) has DateTime only.
const (
	Epoch           = 1704067200 // 2024-01-01T00:00:00Z
	EventsPerSecond = 1000
)

// UserIDs bounds Event.UserID: ids are drawn from [0, UserIDs).
const UserIDs = 1_000_000

// ValueRange bounds Event.Value: values are drawn from
// [-ValueRange/2, ValueRange/2).
const ValueRange = 1_000_000

// kindOf returns one of the eight values of Event.Kind.
func kindOf(h uint64) string {
	switch h % 8 {
	case 0:
		return "view"
	case 1:
		return "click"
	case 2:
		return "scroll"
	case 3:
		return "search"
	case 4:
		return "add_to_cart"
	case 5:
		return "purchase"
	case 6:
		return "signup"
	default:
		return "logout"
	}
}

// maxKindBytes is the length of the longest kind.
const maxKindBytes = len("add_to_cart")

// Columns is the ClickHouse column list of an event row, in the order of
// Event's fields; inserts name it explicitly (INSERT INTO t (Columns)).
const Columns = "id, ts, user_id, kind, value, payload"

// Event is one row of the dataset.
type Event struct {
	ID      uint64 `json:"id"`
	TS      uint32 `json:"ts"` // Unix seconds
	UserID  uint32 `json:"user_id"`
	Kind    string `json:"kind"`
	Value   int64  `json:"value"`
	Payload string `json:"payload"` // lowercase letters, sized to pad the message
}

// Spec names one dataset: its version tag and its shape.
type Spec struct {
	// Dataset is the version tag; it seeds every derived field, so two tags
	// give two different datasets of the same shape.
	Dataset string
	// Messages is the number of messages in the dataset.
	Messages int64
	// EventsPerMessage is how many rows one message carries (at least 1).
	EventsPerMessage int
	// MessageBytes is the exact size of every message.
	MessageBytes int
}

// Rows is the number of rows the dataset lands: Messages × EventsPerMessage.
func (s Spec) Rows() int64 { return s.Messages * int64(s.EventsPerMessage) }

// Validate reports every problem with the spec at once.
func (s Spec) Validate() error {
	var errs []error
	if s.Dataset == "" {
		errs = append(errs, errors.New("corpus: dataset tag is empty; name a version such as \"v1\""))
	}
	if s.Messages < 0 {
		errs = append(errs, fmt.Errorf("corpus: messages is %d; it must be 0 or more", s.Messages))
	}
	if s.EventsPerMessage < 1 {
		errs = append(errs, fmt.Errorf("corpus: events per message is %d; it must be at least 1", s.EventsPerMessage))
	}
	if len(errs) == 0 {
		rows := s.Rows()
		if s.Messages > 0 && rows/int64(s.EventsPerMessage) != s.Messages {
			errs = append(errs, fmt.Errorf("corpus: %d messages × %d events overflows the id space", s.Messages, s.EventsPerMessage))
		} else if lastTS := uint64(Epoch) + uint64(max(rows-1, 0))/EventsPerSecond; lastTS > math.MaxUint32 {
			errs = append(errs, fmt.Errorf("corpus: %d rows at %d per second run past the last DateTime second (2106); use fewer messages", rows, EventsPerSecond))
		} else if need := s.MinMessageBytes(); s.MessageBytes < need {
			errs = append(errs, fmt.Errorf("corpus: message size %d bytes is too small for %d events per message over %d messages; at least %d bytes are needed",
				s.MessageBytes, s.EventsPerMessage, s.Messages, need))
		}
	}
	return errors.Join(errs...)
}

// MinMessageBytes is the smallest message size that fits every message of
// the spec with an empty payload: the widest id, timestamp, user id, kind
// and value it can hold.
func (s Spec) MinMessageBytes() int {
	maxID := uint64(0)
	if rows := s.Rows(); rows > 0 {
		maxID = uint64(rows - 1)
	}
	maxTS := uint64(Epoch) + maxID/EventsPerSecond
	perEvent := fixedEventBytes +
		decimalLen(maxID) +
		decimalLen(maxTS) +
		decimalLen(UserIDs-1) +
		maxKindBytes +
		1 + decimalLen(ValueRange/2) // sign and magnitude
	return perEvent * s.EventsPerMessage
}

// fixedEventBytes counts the JSON punctuation and keys of one event line.
const fixedEventBytes = len(`{"id":`) + len(`,"ts":`) + len(`,"user_id":`) +
	len(`,"kind":"`) + len(`","value":`) + len(`,"payload":"`) + len(`"}`) + len("\n")

// seed derives the dataset's hash seed from its tag.
func (s Spec) seed() uint64 {
	// FNV-1a, inline so that deriving a message allocates nothing.
	h := uint64(14695981039346656037)
	for i := 0; i < len(s.Dataset); i++ {
		h ^= uint64(s.Dataset[i])
		h *= 1099511628211
	}
	return h
}

// splitmix64 is the finaliser of the SplitMix64 generator: a cheap,
// well-mixed 64-bit hash. Feeding its output back in walks the generator's
// sequence.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fields are the derived values of one event, before the payload is sized.
type fields struct {
	id     uint64
	ts     uint32
	userID uint32
	kind   string
	value  int64
	h      uint64 // seeds the payload letters
}

func (s Spec) fields(seed, id uint64) fields {
	h := splitmix64(seed ^ id)
	return fields{
		id:     id,
		ts:     uint32(Epoch + id/EventsPerSecond),
		userID: uint32(h % UserIDs),
		kind:   kindOf(h >> 32),
		value:  int64(splitmix64(h)%ValueRange) - ValueRange/2,
		h:      h,
	}
}

// baseLen is the length of the event's line with an empty payload.
func (f fields) baseLen() int {
	return fixedEventBytes + decimalLen(f.id) + decimalLen(uint64(f.ts)) +
		decimalLen(uint64(f.userID)) + len(f.kind) + intLen(f.value)
}

// message derives the events of message i into fs (reusing its storage)
// and the payload length of each.
func (s Spec) message(fs []fields, lens []int, i int64) ([]fields, []int, error) {
	if i < 0 || i >= s.Messages {
		return fs, lens, fmt.Errorf("corpus: message %d is outside the dataset's %d messages", i, s.Messages)
	}
	seed := s.seed()
	fs, lens = fs[:0], lens[:0]
	first := uint64(i) * uint64(s.EventsPerMessage)
	base := 0
	for j := 0; j < s.EventsPerMessage; j++ {
		f := s.fields(seed, first+uint64(j))
		base += f.baseLen()
		fs = append(fs, f)
	}
	pad := s.MessageBytes - base
	if pad < 0 {
		return fs, lens, fmt.Errorf("corpus: message %d needs %d bytes without payload; the message size is %d", i, base, s.MessageBytes)
	}
	// Equal shares of the padding, the remainder on the last event.
	share := pad / len(fs)
	for range fs {
		lens = append(lens, share)
	}
	lens[len(lens)-1] += pad - share*len(fs)
	return fs, lens, nil
}

// AppendMessage appends message i to dst and returns the extended slice.
// It allocates nothing when dst has room for Spec.MessageBytes more bytes
// and the message has at most 8 events.
func (s Spec) AppendMessage(dst []byte, i int64) ([]byte, error) {
	var fstack [8]fields
	var lstack [8]int
	fs, lens, err := s.message(fstack[:0], lstack[:0], i)
	if err != nil {
		return dst, err
	}
	for j, f := range fs {
		dst = appendEvent(dst, f, lens[j])
	}
	return dst, nil
}

// Message returns message i in a new slice.
func (s Spec) Message(i int64) ([]byte, error) {
	return s.AppendMessage(make([]byte, 0, s.MessageBytes), i)
}

// AppendEvents appends the rows message i carries to dst, exactly as a
// reader of Message(i) decodes them.
func (s Spec) AppendEvents(dst []Event, i int64) ([]Event, error) {
	var fstack [8]fields
	var lstack [8]int
	fs, lens, err := s.message(fstack[:0], lstack[:0], i)
	if err != nil {
		return dst, err
	}
	for j, f := range fs {
		dst = append(dst, Event{
			ID:      f.id,
			TS:      f.ts,
			UserID:  f.userID,
			Kind:    f.kind,
			Value:   f.value,
			Payload: string(appendPayload(make([]byte, 0, lens[j]), f.h, lens[j])),
		})
	}
	return dst, nil
}

func appendEvent(dst []byte, f fields, payload int) []byte {
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendUint(dst, f.id, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendUint(dst, uint64(f.ts), 10)
	dst = append(dst, `,"user_id":`...)
	dst = strconv.AppendUint(dst, uint64(f.userID), 10)
	dst = append(dst, `,"kind":"`...)
	dst = append(dst, f.kind...)
	dst = append(dst, `","value":`...)
	dst = strconv.AppendInt(dst, f.value, 10)
	dst = append(dst, `,"payload":"`...)
	dst = appendPayload(dst, f.h, payload)
	dst = append(dst, `"}`...)
	return append(dst, '\n')
}

// appendPayload appends n lowercase letters drawn from a splitmix64 stream
// seeded by h: cheap to make, JSON-safe, and not trivially compressible.
// Each hash yields eight letters, byte b mapping to 'a' + b*26/256.
func appendPayload(dst []byte, h uint64, n int) []byte {
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	k := 0
	for ; k+8 <= n; k += 8 {
		h = splitmix64(h)
		binary.LittleEndian.PutUint64(out[k:], letters(h))
	}
	if k < n {
		h = splitmix64(h)
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], letters(h))
		copy(out[k:], tail[:n-k])
	}
	return dst[:len(dst)+n]
}

// letters maps each byte b of x to 'a' + b*26/256, eight bytes at once: the
// even and odd bytes are scaled in 16-bit lanes, where b*26 cannot carry
// into the next lane.
func letters(x uint64) uint64 {
	const lanes = 0x00ff00ff00ff00ff
	even := ((x & lanes) * 26 >> 8) & lanes
	odd := (((x >> 8) & lanes) * 26 >> 8) & lanes
	return (even | odd<<8) + 0x6161616161616161
}

func decimalLen(x uint64) int {
	n := 1
	for x >= 10 {
		x /= 10
		n++
	}
	return n
}

func intLen(x int64) int {
	if x < 0 {
		return 1 + decimalLen(uint64(-x))
	}
	return decimalLen(uint64(x))
}
