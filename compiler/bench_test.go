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
		for _, env := range tr.Environments() {
			for _, ent := range tr.Entrants() {
				if !tr.Supports(ent, env) {
					continue
				}
				variants, _ := tr.Variants(ent)
				for _, v := range variants {
					if ps := tr.Check(env, ent, v); len(ps) > 0 {
						b.Fatal(ps)
					}
				}
			}
		}
	}
}
