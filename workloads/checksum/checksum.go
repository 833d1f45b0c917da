// Package checksum holds what every workload's closed-form expectation is
// made of: 128-bit sums, and the fingerprint that reduces a string to an
// integer ClickHouse computes the same way. The checksum gate compares
// such sums, taken over the rows an arm landed, with the generator's.
package checksum

import (
	"encoding/binary"
	"math/big"
	"math/bits"
)

// Fingerprint reduces a short string, given as the parts it is the
// concatenation of, to two integers whose sum ClickHouse computes the same
// way: its first eight bytes and its last eight bytes reversed, each read
// as a little-endian u64, zero-padded. In SQL:
// reinterpretAsUInt64(s) + reinterpretAsUInt64(reverse(s)), in every
// ClickHouse version. It reads every byte of a string of up to 16 bytes;
// a workload whose strings are longer, or not ASCII (reverse is byte-wise),
// checks that its strings still fingerprint apart.
func Fingerprint(parts ...string) (head, tail uint64) {
	var h, t [8]byte
	n := 0
	for _, p := range parts {
		for i := 0; i < len(p) && n < 8; i++ {
			h[n] = p[i]
			n++
		}
	}
	n = 0
	for i := len(parts) - 1; i >= 0 && n < 8; i-- {
		p := parts[i]
		for j := len(p) - 1; j >= 0 && n < 8; j-- {
			t[n] = p[j]
			n++
		}
	}
	return binary.LittleEndian.Uint64(h[:]), binary.LittleEndian.Uint64(t[:])
}

// Sum is a signed 128-bit sum, in two's complement: sums over a large
// corpus outgrow 64 bits (110M rows of fingerprints near 2^64). The zero
// value is 0.
type Sum struct{ hi, lo uint64 }

// Add adds a signed value.
func (s *Sum) Add(x int64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, uint64(x), 0)
	s.hi += c
	if x < 0 {
		s.hi-- // the sign's extension into the high word
	}
}

// AddUnsigned adds an unsigned value.
func (s *Sum) AddUnsigned(x uint64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, x, 0)
	s.hi += c
}

// AddFingerprint adds a fingerprint's two halves.
func (s *Sum) AddFingerprint(head, tail uint64) {
	s.AddUnsigned(head)
	s.AddUnsigned(tail)
}

// AddSum adds another sum.
func (s *Sum) AddSum(o Sum) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, o.lo, 0)
	s.hi += o.hi + c
}

// Big returns the sum as a big integer.
func (s Sum) Big() *big.Int {
	v := new(big.Int).SetUint64(s.hi)
	v.Lsh(v, 64)
	v.Or(v, new(big.Int).SetUint64(s.lo))
	if s.hi>>63 == 1 { // negative: subtract 2^128
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return v
}

// Expected is what a correct arm lands: the rows, and the checksum's sums
// over them by name.
type Expected struct {
	// Messages is the dataset's size the expectation is for.
	Messages int64
	// Rows is the rows a correct arm lands: distinct row identities.
	Rows uint64
	// Sums are the checksum's sums, by the names the workload gives them.
	Sums map[string]*big.Int
}
