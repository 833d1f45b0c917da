package chdb

import (
	"fmt"
	"strings"
)

// Split cuts a SQL script (what `clickhouse-client --multiquery` reads)
// into its statements, each without its semicolon and trimmed. A
// semicolon inside a string, a quoted name or a comment does not end a
// statement; a piece that holds nothing but comments is not one.
func Split(script string) ([]string, error) {
	var out []string
	start, code := 0, false // code: the piece holds more than comments
	cut := func(end int) {
		if code {
			out = append(out, strings.TrimSpace(script[start:end]))
		}
		start, code = end+1, false
	}
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case c == ';':
			cut(i)
		case c == '-' && strings.HasPrefix(script[i:], "--"):
			nl := strings.IndexByte(script[i:], '\n')
			if nl < 0 {
				i = len(script) - 1
			} else {
				i += nl
			}
		case c == '/' && strings.HasPrefix(script[i:], "/*"):
			end := strings.Index(script[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("a comment opened at byte %d is not closed", i)
			}
			i += 2 + end + 1
		case c == '\'' || c == '"' || c == '`':
			end, err := quoted(script, i)
			if err != nil {
				return nil, err
			}
			i, code = end, true
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			code = true
		}
	}
	cut(len(script))
	return out, nil
}

// quoted returns the index of the quote that closes the one at open: a
// backslash escapes the next byte, and a doubled quote is one quote.
func quoted(s string, open int) (int, error) {
	q := s[open]
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i, nil
		}
	}
	return 0, fmt.Errorf("a quote %c opened at byte %d is not closed", q, open)
}
