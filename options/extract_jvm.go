package options

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// ExtractJVM reads the options of the JDK on the PATH from the JDK itself:
// the -X options `java -X` lists, and every -XX flag
// `java -XX:+PrintFlagsFinal -version` prints, with its type. The
// JVM arms run OpenJDK 17, as the test command's JDK is. It gives
// options/jvm/registry.json.
func ExtractJVM(ctx context.Context, root string) (map[string][]byte, error) {
	version, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("running java -version: %w: %s", err, version)
	}
	build := regexp.MustCompile(`build ([^,)]+)`).FindSubmatch(version)
	feature := regexp.MustCompile(`version "([0-9]+)`).FindSubmatch(version)
	if build == nil || feature == nil {
		return nil, fmt.Errorf("java -version says no version: %s", version)
	}
	xs, err := exec.CommandContext(ctx, "java", "-X").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("running java -X: %w", err)
	}
	flags, err := exec.CommandContext(ctx, "java", "-XX:+PrintFlagsFinal", "-version").Output()
	if err != nil {
		return nil, fmt.Errorf("running java -XX:+PrintFlagsFinal -version: %w", err)
	}
	opts := append(xOptions(xs), xxFlags(flags)...)
	b, err := Marshal(Registry{
		System:  "OpenJDK",
		Version: string(feature[1]),
		Source:  fmt.Sprintf("the -X options `java -X` lists and the flags `java -XX:+PrintFlagsFinal -version` prints, read from OpenJDK %s's java", build[1]),
		Options: opts,
	})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"options/jvm/registry.json": b}, nil
}

// xOptions reads `java -X`: an option starts a line, indented four
// spaces, its description beside it or on the lines below.
func xOptions(out []byte) []Option {
	head := regexp.MustCompile(`^    (-X[A-Za-z]+)(<[a-z]+>|:[^ ]*)?\s*(.*)$`)
	var opts []Option
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := head.FindStringSubmatch(line); m != nil {
			if seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			typ := String
			switch m[2] {
			case "<size>":
				typ = Size
			case "":
				typ = Bool
			}
			opts = append(opts, Option{Key: m[1], Type: typ, Doc: m[3]})
			continue
		}
		if n := len(opts); n > 0 && strings.HasPrefix(line, "                      ") && !strings.HasPrefix(strings.TrimSpace(line), "-") {
			opts[n-1].Doc = strings.TrimSpace(opts[n-1].Doc + " " + strings.TrimSpace(line))
		}
	}
	return opts
}

// xxFlags reads the table of -XX:+PrintFlagsFinal: type, name, "=",
// value, and the flag's kinds and origin in braces.
func xxFlags(out []byte) []Option {
	row := regexp.MustCompile(`^\s*(\S+)\s+(\w+)\s+:?=\s*.*?\s+\{([^}]*)\}\s*\{[^}]*\}\s*$`)
	var opts []Option
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		// No default: HotSpot sizes many from the machine, and some
		// from the process's own addresses, so they differ run to run.
		opts = append(opts, Option{Key: "-XX:" + m[2], Type: flagType(m[1]), Doc: "a " + m[3] + " flag of HotSpot"})
	}
	return opts
}

// flagType maps HotSpot's C++ flag types.
func flagType(t string) Type {
	switch t {
	case "bool":
		return Bool
	case "size_t":
		return Size
	case "int", "uint", "intx", "uintx", "uint64_t":
		return Int
	case "double":
		return Float
	}
	return String
}
