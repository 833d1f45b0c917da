package checksum

import (
	"math"
	"math/big"
	"testing"
)

func TestSumIsExactPast64Bits(t *testing.T) {
	var s Sum
	want := new(big.Int)
	for _, x := range []int64{math.MaxInt64, math.MaxInt64, -5, math.MinInt64, 7, -1} {
		s.Add(x)
		want.Add(want, big.NewInt(x))
	}
	for range 3 {
		s.AddUnsigned(math.MaxUint64)
		want.Add(want, new(big.Int).SetUint64(math.MaxUint64))
	}
	var o Sum
	o.Add(-1_000_000)
	s.AddSum(o)
	want.Add(want, big.NewInt(-1_000_000))
	if s.Big().Cmp(want) != 0 {
		t.Fatalf("sum = %s; want %s", s.Big(), want)
	}
	var neg Sum
	neg.Add(-3)
	if neg.Big().Int64() != -3 {
		t.Fatalf("-3 reads back as %s", neg.Big())
	}
}

// The parts' fingerprint is the whole's, and the values are the server's:
// reinterpretAsUInt64('sensor-1023') + reinterpretAsUInt64(reverse(...))
// on ClickHouse 18.16 gives 3543614304813999475 + 8317992575200932403.
func TestFingerprint(t *testing.T) {
	h, tl := Fingerprint("sensor-1023")
	if h != 3543614304813999475 || tl != 8317992575200932403 {
		t.Fatalf("Fingerprint(sensor-1023) = %d, %d", h, tl)
	}
	ph, pt := Fingerprint("sen", "sor-", "", "1023")
	if ph != h || pt != tl {
		t.Fatal("the parts fingerprint differently from the whole")
	}
	if h, tl := Fingerprint(); h != 0 || tl != 0 {
		t.Fatal("the empty string's fingerprint is not 0")
	}
}
