package main

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/testenv"
)

// fenced finds the shell blocks of a Markdown file.
var fenced = regexp.MustCompile("(?s)```(?:sh|bash)\n(.*?)```")

// documentedCommands lists every command of the shell blocks of the README
// and of docs/, comments and blank lines dropped, by file.
func documentedCommands(t *testing.T, root string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range append([]string{filepath.Join(root, "README.md")}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fenced.FindAllStringSubmatch(string(b), -1) {
			for _, line := range strings.Split(m[1], "\n") {
				if i := strings.Index(line, " #"); i >= 0 {
					line = line[:i]
				}
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
					out[f] = append(out[f], line)
				}
			}
		}
	}
	return out
}

// cheap are the spatec commands a documented line runs here as written:
// they read the tree and nothing else.
var cheap = map[string]bool{"vet": true, "plan": true}

// TestDocumentedCommandsRun: every command in a shell block of the README
// or docs/ runs as written. The cheap ones run (spatec vet and plan, cue vet
// and cue fmt, checking); of the others, the script exists and parses, or
// the spatec command exists and takes every flag the line gives it.
func TestDocumentedCommandsRun(t *testing.T) {
	root := findCheckout()
	if root == "" {
		t.Fatal("no checkout around the test's directory")
	}
	cmds := documentedCommands(t, root)
	if len(cmds[filepath.Join(root, "README.md")]) < 5 {
		t.Fatalf("the README's shell blocks hold %d commands; the test reads the wrong blocks", len(cmds[filepath.Join(root, "README.md")]))
	}
	for file, lines := range cmds {
		for _, line := range lines {
			rel, _ := filepath.Rel(root, file)
			t.Run(rel+": "+line, func(t *testing.T) {
				words := strings.Fields(line)
				// An environment a command is given (NAME=value) is not
				// the command.
				for len(words) > 1 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
					words = words[1:]
				}
				switch {
				case len(words) > 2 && words[0] == "go" && words[1] == "test":
					// The package's tests the pattern names exist and know
					// every flag given: -list runs none of them.
					args := []string{"test", words[2]}
					for i := 3; i < len(words); i++ {
						if words[i] == "-run" && i+1 < len(words) {
							args = append(args, "-list", words[i+1])
							i++
							continue
						}
						args = append(args, words[i])
					}
					cmd := osexec.Command("go", args...)
					cmd.Dir = root
					out, err := cmd.CombinedOutput()
					if err != nil || !strings.Contains(string(out), "Test") {
						t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
					}
				case words[0] == "bash":
					script := filepath.Join(root, words[1])
					if out, err := osexec.Command("bash", "-n", script).CombinedOutput(); err != nil {
						t.Fatalf("%s does not parse: %v\n%s", words[1], err, out)
					}
				case words[0] == "cue":
					args := words[1:]
					if args[0] == "fmt" {
						args = append([]string{"fmt", "--check"}, args[1:]...) // as written, but touching nothing
					}
					cmd := osexec.Command(testenv.Cue(t), args...)
					cmd.Dir = root
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%v\n%s", err, out)
					}
				case words[0] == "spatec" || len(words) > 2 && strings.Join(words[:3], " ") == "go run ./cmd/spatec":
					if words[0] == "go" {
						words = words[2:]
					}
					args := words[1:]
					if cheap[args[0]] {
						if code, _, errOut := cli(t, args...); code != exitOK {
							t.Fatalf("exit %d:\n%s", code, errOut)
						}
						return
					}
					// The command exists and knows every flag given.
					_, _, help := cli(t, args[0], "-h")
					for _, a := range args[1:] {
						if !strings.HasPrefix(a, "-") {
							continue
						}
						name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
						if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `( |$)`).MatchString(help) {
							t.Errorf("spatec %s has no flag -%s:\n%s", args[0], name, help)
						}
					}
				default:
					t.Fatalf("a documented command this test does not know how to check: %s", line)
				}
			})
		}
	}
}
