package compile

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"spatec.dev/spatec/internal/testenv"
	"spatec.dev/spatec/schema"
)

// tree writes files (path from the tree's root → content) into a new tree.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	testenv.Require(t, name, func() error { _, err := exec.LookPath(name); return err })
}

// A crate with no dependencies, locked, whose binary prints a greeting.
var crate = map[string]string{
	"arms/hello/Cargo.toml":  "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
	"arms/hello/Cargo.lock":  "version = 4\n\n[[package]]\nname = \"hello\"\nversion = \"0.1.0\"\n",
	"arms/hello/src/main.rs": "fn main() { println!(\"hello from the tree\"); }\n",
	"shared/greeting.txt":    "an input beyond the crate\n",
}

var helloStep = schema.Compile{
	Cargo:  &schema.Cargo{Crate: "arms/hello", Bin: "hello"},
	Inputs: []string{"shared/greeting.txt"},
	To:     "/usr/local/bin/hello",
}

// What names an output moves with every file it is compiled from, and
// with nothing else: not the build directory, not a file outside the
// project that it does not declare.
func TestTheDigestIsWhatTheProgramIsCompiledFrom(t *testing.T) {
	requireTool(t, "cargo")
	ctx := context.Background()
	dir := tree(t, crate)
	tr := &Tree{Dir: dir}
	digest := func() string {
		t.Helper()
		d, err := tr.Digest(ctx, helloStep)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest()
	if !strings.HasPrefix(first, "sha256:") || digest() != first {
		t.Fatalf("digest %q is not stable", first)
	}
	for _, unrelated := range []string{"arms/hello/target/debug/junk", "arms/hello/.git/HEAD", "elsewhere.txt"} {
		tree := filepath.Join(dir, filepath.FromSlash(unrelated))
		if err := os.MkdirAll(filepath.Dir(tree), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tree, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := digest(); got != first {
			t.Errorf("writing %s moved the digest", unrelated)
		}
	}
	for _, source := range []string{"arms/hello/src/main.rs", "shared/greeting.txt", "arms/hello/Cargo.lock"} {
		p := filepath.Join(dir, filepath.FromSlash(source))
		b, _ := os.ReadFile(p)
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		next := digest()
		if next == first {
			t.Errorf("changing %s left the digest as it was", source)
		}
		first = next
	}
}

// A crate is compiled once: the second build of the same sources is the
// cached output, which runs.
func TestACrateIsCompiledOnceAndRuns(t *testing.T) {
	requireTool(t, "cargo")
	ctx := context.Background()
	tr := &Tree{Dir: tree(t, crate), CacheDir: t.TempDir()}
	out, err := tr.Build(ctx, helloStep)
	if err != nil {
		t.Fatal(err)
	}
	if out.Mode != 0o755 {
		t.Errorf("a binary goes into the image as %o, want 755", out.Mode)
	}
	got, err := exec.Command(out.Path).Output()
	if err != nil || string(got) != "hello from the tree\n" {
		t.Fatalf("the output says %q (%v)", got, err)
	}
	// The second build takes the cached output: cargo's target directory,
	// removed, is not made again.
	target := filepath.Join(tr.CacheDir, "cargo-target")
	if err := os.RemoveAll(target); err != nil {
		t.Fatal(err)
	}
	again, err := tr.Build(ctx, helloStep)
	if err != nil {
		t.Fatal(err)
	}
	if again.Path != out.Path || again.Digest != out.Digest {
		t.Errorf("the second build gave %+v, the first %+v", again, out)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the second build ran cargo again (%s: %v)", target, err)
	}
}

// otherArch is an architecture that is not this host's.
func otherArch() schema.Arch {
	if runtime.GOARCH == string(schema.ARM64) {
		return schema.AMD64
	}
	return schema.ARM64
}

// A crate for another architecture than the host's is cross-compiled for
// it, under the toolchain the arm pins (whose target .ci/services adds,
// with Debian's cross gcc), into a binary of that architecture, named
// apart from the host's build of the same sources.
func TestACrateIsCrossCompiledForTheEnvironmentsArchitecture(t *testing.T) {
	requireTool(t, "cargo")
	ctx := context.Background()
	pin, err := os.ReadFile("../../entrants/spate/arm/rust-toolchain.toml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"arms/hello/rust-toolchain.toml": string(pin)}
	for k, v := range crate {
		files[k] = v
	}
	dir := tree(t, files)
	native := &Tree{Dir: dir}
	tr := &Tree{Dir: dir, CacheDir: t.TempDir(), Arch: otherArch()}
	want := crossTargets[otherArch()]
	if args, env := cargoBuild("hello", crossTarget{}); slices.Contains(args, "--target") || len(env) > 0 {
		t.Errorf("a build for the host runs cargo %q with %q; want no target of its own", args, env)
	}
	if args, env := cargoBuild("hello", want); !slices.Contains(args, want.triple) ||
		!slices.Contains(env, "CARGO_TARGET_"+strings.ToUpper(strings.ReplaceAll(want.triple, "-", "_"))+"_LINKER="+want.gnu+"-gcc") {
		t.Errorf("a cross build runs cargo %q with %q; want --target %s linked by %s-gcc", args, env, want.triple, want.gnu)
	}
	testenv.Require(t, "cross-compiling Rust for "+string(otherArch()), func() error {
		_, err := tr.cross(ctx, helloStep, filepath.Join(dir, "arms", "hello"))
		return err
	})
	out, err := tr.Build(ctx, helloStep)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := elf.Open(out.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	machine := map[schema.Arch]elf.Machine{schema.AMD64: elf.EM_X86_64, schema.ARM64: elf.EM_AARCH64}[otherArch()]
	if bin.Machine != machine {
		t.Errorf("the binary is for %v, want %v", bin.Machine, machine)
	}
	host, err := native.Digest(ctx, helloStep)
	if err != nil {
		t.Fatal(err)
	}
	if out.Digest == host {
		t.Error("the cross-compiled binary is named as the host's")
	}
}

// A lock file out of date with its manifest is refused, not rewritten:
// what the image carries is what the lock says.
func TestALockOutOfDateIsRefused(t *testing.T) {
	requireTool(t, "cargo")
	files := map[string]string{}
	for k, v := range crate {
		files[k] = v
	}
	files["arms/hello/Cargo.toml"] += "\n[dependencies]\nitoa = \"1\"\n"
	tr := &Tree{Dir: tree(t, files), CacheDir: t.TempDir()}
	_, err := tr.Build(context.Background(), helloStep)
	if err == nil || !strings.Contains(err.Error(), "--locked") {
		t.Fatalf("got %v, want cargo's refusal to change a locked Cargo.lock", err)
	}
}

// A Maven project is packaged with its pinned plugins, and its jar taken.
func TestAMavenProjectIsPackaged(t *testing.T) {
	requireTool(t, "mvn")
	dir := tree(t, map[string]string{
		"arms/job/pom.xml": `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>t</groupId><artifactId>job</artifactId><version>1</version>
  <properties><maven.compiler.release>17</maven.compiler.release><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  <build><finalName>job</finalName><pluginManagement><plugins>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId><version>3.5.4</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
  </plugins></pluginManagement></build>
</project>
`,
		"arms/job/src/main/java/t/Job.java": "package t;\npublic final class Job { public static void main(String[] a) { System.out.println(\"job\"); } }\n",
	})
	tr := &Tree{Dir: dir, CacheDir: t.TempDir()}
	out, err := tr.Build(context.Background(), schema.Compile{Maven: &schema.Maven{Project: "arms/job", Jar: "job.jar"}, To: "/opt/job.jar"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("java", "-cp", out.Path, "t.Job").Output()
	if err != nil || string(got) != "job\n" {
		t.Fatalf("the jar's class says %q (%v)", got, err)
	}
	if out.Mode != 0o644 {
		t.Errorf("a jar goes into the image as %o, want 644", out.Mode)
	}
	// A jar runs on every architecture: it is named the same for each.
	tr.Arch = otherArch()
	if d, err := tr.Digest(context.Background(), schema.Compile{Maven: &schema.Maven{Project: "arms/job", Jar: "job.jar"}, To: "/opt/job.jar"}); err != nil || d != out.Digest {
		t.Errorf("the jar for %s is named %s (%v), for this host %s; want one name", otherArch(), d, err, out.Digest)
	}
}

// A step whose project is not there says so, with the path.
func TestAMissingProjectIsNamed(t *testing.T) {
	tr := &Tree{Dir: t.TempDir()}
	_, err := tr.Digest(context.Background(), schema.Compile{Cargo: &schema.Cargo{Crate: "entrants/nope", Bin: "x"}})
	if err == nil || err.Error() != "the Rust crate entrants/nope (binary x): no Cargo.toml in entrants/nope" {
		t.Fatalf("got %v", err)
	}
}
