package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
)

// TestEveryDefinitionFieldHasADocComment: every field of every definition
// of the schema, nested ones too, says what it is for; the schema is
// where an entrant's author learns what to write.
func TestEveryDefinitionFieldHasADocComment(t *testing.T) {
	files, err := filepath.Glob("*.cue")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema files: %v", err)
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			field, ok := d.(*ast.Field)
			if !ok {
				continue
			}
			label, _, _ := ast.LabelName(field.Label)
			if !strings.HasPrefix(label, "#") {
				continue
			}
			if !documented(field) {
				t.Errorf("%s: definition %s has no doc comment", field.Pos(), label)
			}
			checkFields(t, label, field.Value, nil)
		}
	}
}

// checkFields reports every field of the struct literals in v (through
// conjunctions, disjunctions and comprehensions) that has no doc comment.
// A field declared again (with a value, or under a condition) is covered
// by the comment of its declaration in the same struct: outer holds the
// labels documented around a comprehension's body.
func checkFields(t *testing.T, path string, v ast.Expr, outer map[string]bool) {
	t.Helper()
	switch x := v.(type) {
	case *ast.StructLit:
		docs := map[string]bool{}
		for l := range outer {
			docs[l] = true
		}
		for _, e := range x.Elts {
			if f, ok := e.(*ast.Field); ok && documented(f) {
				l, _, _ := ast.LabelName(f.Label)
				docs[l] = true
			}
		}
		for _, e := range x.Elts {
			switch el := e.(type) {
			case *ast.Field:
				label, _, _ := ast.LabelName(el.Label)
				if label == "" || strings.HasPrefix(label, "_") {
					continue // a pattern or a hidden helper
				}
				if _, pattern := el.Label.(*ast.ListLit); pattern {
					continue
				}
				if !documented(el) && !docs[label] {
					t.Errorf("%s: field %s.%s has no doc comment", el.Pos(), path, label)
				}
				checkFields(t, path+"."+label, el.Value, nil)
			case *ast.Comprehension:
				inner := docs
				if hasDoc(el) {
					// A comment on the condition covers what it declares.
					inner = map[string]bool{}
					for l := range docs {
						inner[l] = true
					}
					if s, ok := el.Value.(*ast.StructLit); ok {
						for _, e := range s.Elts {
							if f, ok := e.(*ast.Field); ok {
								l, _, _ := ast.LabelName(f.Label)
								inner[l] = true
							}
						}
					}
				}
				checkFields(t, path, el.Value, inner)
			case *ast.EmbedDecl:
				checkFields(t, path, el.Expr, nil)
			}
		}
	case *ast.BinaryExpr:
		// `#Def & {…}` gives values to fields #Def declares, and
		// documents.
		if isRef(x.X) || isRef(x.Y) {
			return
		}
		checkFields(t, path, x.X, outer)
		checkFields(t, path, x.Y, outer)
	}
}

func isRef(e ast.Expr) bool {
	switch e.(type) {
	case *ast.Ident, *ast.SelectorExpr:
		return true
	}
	return false
}

func hasDoc(n ast.Node) bool {
	for _, c := range ast.Comments(n) {
		if c.Doc {
			return true
		}
	}
	return false
}

// documented reports whether a field has a comment on the lines before it.
func documented(f *ast.Field) bool { return hasDoc(f) }
