package jsonrows

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// AppendDecoded parses a message (newline-delimited JSON events) and
// appends its events to dst. It is the reader's side of AppendMessage and
// uses the standard library's JSON decoder, as a consumer in the wild would.
func AppendDecoded(dst []Event, msg []byte) ([]Event, error) {
	for line := 0; len(msg) > 0; line++ {
		end := bytes.IndexByte(msg, '\n')
		if end < 0 {
			end = len(msg)
		}
		if end > 0 {
			var e Event
			if err := json.Unmarshal(msg[:end], &e); err != nil {
				return dst, fmt.Errorf("corpus: decoding event %d of a message: %w", line, err)
			}
			dst = append(dst, e)
		}
		if end == len(msg) {
			break
		}
		msg = msg[end+1:]
	}
	return dst, nil
}
