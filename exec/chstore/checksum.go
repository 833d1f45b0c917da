package chstore

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// SumSpec is one sum of a workload's checksum: a per-row SQL expression,
// read as an integer or as a string's fingerprint.
type SumSpec struct {
	Name string
	SQL  string
	// Fingerprint reads the expression as a string: its first eight bytes
	// and its last eight reversed, each a little-endian u64, added
	// (reinterpretAsUInt64 of the string and of its reverse).
	Fingerprint bool
}

// ChecksumOptions say which rows Checksum reads and how.
type ChecksumOptions struct {
	// Identity is the row identity's SQL expression.
	Identity string
	// Message is the SQL expression of the index of the message a row came
	// from; Messages is how many messages the dataset holds. The table is
	// read PerQuery messages at a time, so that no query holds more than
	// that many messages' rows at once.
	Message  string
	Messages int64
	PerQuery int64
	// Distinct takes the sums over distinct rows (identity and summed
	// values together), for a table that holds duplicates; without it
	// every row counts once, which is the same when there are none and
	// costs one streaming pass.
	Distinct bool
}

// Checksum is what the sums read from a table.
type Checksum struct {
	// Rows is the rows summed: with Distinct, the distinct (identity,
	// values) tuples, which exceed the distinct identities when two
	// copies of a row disagree.
	Rows uint64
	// Sums are the sums, by name.
	Sums map[string]*big.Int
	// Queries is how many queries it took, and Elapsed how long.
	Queries int
	Elapsed time.Duration
}

// Checksum sums each expression of sums over table's rows, exactly at any
// size and on every ClickHouse version spatec supports: 18.16 has no
// 128-bit integers, so each value is summed as its low and high 32-bit
// halves (and its negatives counted), each sum fitting in 64 bits, and the
// halves are put together here.
func (s *Store) Checksum(ctx context.Context, table string, sums []SumSpec, o ChecksumOptions) (Checksum, error) {
	q, err := SQLFor(table)
	if err != nil {
		return Checksum{}, err
	}
	start := time.Now()
	out := NewChecksum(sums)
	per := max(o.PerQuery, 1)
	for i, query := range q.Checksum(sums, o) {
		lo := int64(i) * per
		// Every part is a UInt64: the count, then per sum its halves (and
		// for an integer, its negatives).
		rows, err := s.conn.Query(ctx, query)
		if err != nil {
			return out, fmt.Errorf("summing the checksum of %s (messages %d to %d) on ClickHouse at %s: %w", table, lo, lo+per-1, s.addr, err)
		}
		parts := make([]uint64, partsOf(sums))
		ptrs := make([]any, len(parts))
		for i := range parts {
			ptrs[i] = &parts[i]
		}
		if !rows.Next() {
			rows.Close()
			return out, fmt.Errorf("summing the checksum of %s: ClickHouse returned no row: %v", table, rows.Err())
		}
		err = rows.Scan(ptrs...)
		rows.Close()
		if err != nil {
			return out, fmt.Errorf("reading the checksum of %s: %w", table, err)
		}
		if err := out.Add(sums, parts); err != nil {
			return out, fmt.Errorf("reading the checksum of %s: %w", table, err)
		}
	}
	out.Elapsed = time.Since(start)
	return out, nil
}

// NewChecksum is a checksum of sums with nothing summed yet.
func NewChecksum(sums []SumSpec) Checksum {
	c := Checksum{Sums: map[string]*big.Int{}}
	for _, sp := range sums {
		c.Sums[sp.Name] = new(big.Int)
	}
	return c
}

// Add adds the answer of one of the checksum's queries (TableSQL.Checksum)
// to c: its row of UInt64 columns, in order.
func (c *Checksum) Add(sums []SumSpec, parts []uint64) error {
	if len(parts) != partsOf(sums) {
		return fmt.Errorf("a checksum query of %d sums answers %d columns, not %d", len(sums), partsOf(sums), len(parts))
	}
	c.Queries++
	c.Rows += parts[0]
	k := 1
	for _, sp := range sums {
		n := 2
		if !sp.Fingerprint {
			n = 1
		}
		for range n {
			v := new(big.Int).SetUint64(parts[k+1])
			v.Lsh(v, 32)
			v.Add(v, new(big.Int).SetUint64(parts[k]))
			k += 2
			c.Sums[sp.Name].Add(c.Sums[sp.Name], v)
		}
		if !sp.Fingerprint {
			neg := new(big.Int).SetUint64(parts[k])
			c.Sums[sp.Name].Sub(c.Sums[sp.Name], neg.Lsh(neg, 64))
			k++
		}
	}
	return nil
}

// partsOf is how many columns the checksum query returns.
func partsOf(sums []SumSpec) int {
	n := 1
	for _, sp := range sums {
		if sp.Fingerprint {
			n += 4
		} else {
			n += 3
		}
	}
	return n
}

// checksumQuery reads messages [lo, hi): the inner query picks the values
// (distinct, when asked), the outer one sums their halves.
func checksumQuery(table string, sums []SumSpec, o ChecksumOptions, lo, hi int64) string {
	var inner, outer []string
	inner = append(inner, o.Identity+" AS _identity")
	outer = append(outer, "count()")
	half := func(x string) []string {
		return []string{"sum(bitAnd(" + x + ", 4294967295))", "sum(bitShiftRight(" + x + ", 32))"}
	}
	for i, sp := range sums {
		col := fmt.Sprintf("_s%d", i)
		if sp.Fingerprint {
			inner = append(inner, "CAST("+sp.SQL+" AS String) AS "+col)
			outer = append(outer, half("reinterpretAsUInt64("+col+")")...)
			outer = append(outer, half("reinterpretAsUInt64(reverse("+col+"))")...)
			continue
		}
		inner = append(inner, sp.SQL+" AS "+col)
		outer = append(outer, half("toUInt64("+col+")")...)
		outer = append(outer, "toUInt64(sum("+col+" < 0))")
	}
	distinct := ""
	if o.Distinct {
		distinct = "DISTINCT "
	}
	where := ""
	if o.Message != "" {
		where = fmt.Sprintf(" WHERE (%s) >= %d AND (%s) < %d", o.Message, lo, o.Message, hi)
	}
	return "SELECT " + strings.Join(outer, ", ") + " FROM (SELECT " + distinct + strings.Join(inner, ", ") + " FROM " + table + where + ")"
}
