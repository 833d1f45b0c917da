package compiler

import (
	"os"
	"testing"
)

// BenchmarkAllPlans loads the tree and resolves every plan, as `spatec vet`
// does; bench/plan.sh compares the whole command with `cue vet`.
func BenchmarkAllPlans(b *testing.B) {
	for i := 0; i < b.N; i++ {
		tr, err := Load(Options{FS: os.DirFS("..")})
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range tr.Plans() {
			if ps := tr.Check(id.Env, id.Entrant, id.Variant); len(ps) > 0 {
				b.Fatal(ps)
			}
		}
	}
}
