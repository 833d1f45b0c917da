package schema

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
)

// namesPattern reads the names a definition's closing pattern allows:
// [X=!~"^(name|class|…)$"].
var namesPattern = regexp.MustCompile(`\[X=!~"\^\(([^)]*)\)\$"\]`)

// TestClosedNamesListEveryField: #Environment, #Entrant and #Container
// refuse any other name with a pattern that lists their fields, so that
// the official tool names the rule (C15) at the author's line; the list
// is written by hand, and must be every field the definition declares, no
// more.
func TestClosedNamesListEveryField(t *testing.T) {
	for def, file := range map[string]string{"#Environment": "environment.cue", "#Entrant": "entrant.cue", "#Container": "entrant.cue"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(file, src)
		if err != nil {
			t.Fatal(err)
		}
		var declared []string
		var listed []string
		for _, d := range f.Decls {
			field, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			if label, _, _ := ast.LabelName(field.Label); label != def {
				continue
			}
			for _, e := range field.Value.(*ast.StructLit).Elts {
				switch e := e.(type) {
				case *ast.Field:
					if name, _, err := ast.LabelName(e.Label); err == nil && !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, "#") && !slices.Contains(declared, name) {
						declared = append(declared, name)
					}
					if l, ok := e.Label.(*ast.ListLit); ok && len(l.Elts) == 1 {
						if m := namesPattern.FindStringSubmatch(string(src[l.Pos().Offset():e.Value.Pos().Offset()])); m != nil {
							listed = strings.Split(m[1], "|")
						}
					}
				}
			}
		}
		if len(listed) == 0 {
			t.Errorf("%s: %s has no closing pattern [X=!~\"^(…)$\"]", file, def)
			continue
		}
		slices.Sort(declared)
		slices.Sort(listed)
		if !slices.Equal(declared, listed) {
			t.Errorf("%s: %s's pattern lists %v; its fields are %v", file, def, listed, declared)
		}
	}
}
