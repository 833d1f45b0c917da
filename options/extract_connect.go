package options

// Kafka Connect's registries, read from the ConfigDefs of the Connect
// runtime the arm's image runs, by the Maven module that already checks
// the arm's properties with them (entrants/kafka-connect/check, its main
// class dev.spatec.connect.Registries).
//
// To regenerate the committed files (options/connect/*.json):
//
//	go test ./options -run TestRegistryConnect -update
//
// ClickHouse's sink connector is not on Maven Central and its release zip
// is on GitHub alone, so its own keys are in connector.json only when the
// zip is given: SPATEC_CLICKHOUSE_CONNECT_ZIP=/path/to/
// clickhouse-kafka-connect-v1.4.0.zip (the file the arm's image unzips).

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"spatec.dev/spatec/exec/compile"
	"spatec.dev/spatec/schema"
)

// ConnectClickHouseZipEnv names the release zip of ClickHouse's sink
// connector whose classes ExtractConnect reads the connector's own keys
// from; unset, connector.json holds Connect's sink keys alone.
const ConnectClickHouseZipEnv = "SPATEC_CLICKHOUSE_CONNECT_ZIP"

// connectDir is where Connect's registries are committed.
const connectDir = "options/connect"

// connectModule is the Maven module whose main class prints the
// registries, and its runnable jar.
var connectModule = schema.Compile{
	Maven: &schema.Maven{Project: "entrants/kafka-connect/check", Jar: "spatec-connect-check.jar"},
	To:    "/dev/null",
}

// connectPrinted is one registry as the module prints it: the Maven
// artifacts of org.apache.kafka it was read from name their digests here.
type connectPrinted struct {
	System    string   `json:"system"`
	Version   string   `json:"version"`
	How       string   `json:"how"`
	Artifacts []string `json:"artifacts"`
	Options   []Option `json:"options"`
}

// ExtractConnect builds the module (from Maven's local repository, which
// `mvn -B -q verify` of the module fills; its jar kept in spatec's compile
// cache by content), runs its Registries class and returns each of
// Connect's registries by its committed path: worker.json, connector.json,
// consumer.json, producer.json, admin.json and json-converter.json under
// options/connect.
func ExtractConnect(ctx context.Context, root string) (map[string][]byte, error) {
	tree := compile.Tree{Dir: root}
	// The cache spatec exec compiles into, so that a jar either built is
	// the other's.
	if dir, err := os.UserCacheDir(); err == nil {
		tree.CacheDir = filepath.Join(dir, "spatec", "compile")
	}
	built, err := tree.Build(ctx, connectModule)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", connectModule.Maven.Project, err)
	}
	classpath := built.Path
	var zipSource string
	if zipPath := os.Getenv(ConnectClickHouseZipEnv); zipPath != "" {
		tmp, err := os.MkdirTemp("", "spatec-clickhouse-connect-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if zipSource, err = connectUnzipJars(zipPath, tmp); err != nil {
			return nil, fmt.Errorf("%s: %w", ConnectClickHouseZipEnv, err)
		}
		// After the module's jar, so that Connect's classes are the
		// runtime's whatever the zip carries.
		classpath += string(os.PathListSeparator) + filepath.Join(tmp, "*")
	}

	cmd := exec.CommandContext(ctx, "java", "-cp", classpath, "dev.spatec.connect.Registries")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running dev.spatec.connect.Registries: %w\n%s", err, stderr.String())
	}
	var printed map[string]connectPrinted
	if err := json.Unmarshal(stdout.Bytes(), &printed); err != nil {
		return nil, fmt.Errorf("reading what dev.spatec.connect.Registries printed: %w", err)
	}
	if len(printed) == 0 {
		return nil, errors.New("dev.spatec.connect.Registries printed no registry")
	}

	repo, err := connectMavenRepository()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(printed))
	for name, p := range printed {
		var read []string
		for _, a := range p.Artifacts {
			jar := filepath.Join(repo, "org", "apache", "kafka", a, p.Version, a+"-"+p.Version+".jar")
			sum, err := connectFileSHA256(jar)
			if err != nil {
				return nil, fmt.Errorf("the digest of org.apache.kafka:%s:%s, from Maven's local repository: %w", a, p.Version, err)
			}
			read = append(read, fmt.Sprintf("org.apache.kafka:%s:%s (jar sha256:%s)", a, p.Version, sum))
		}
		if zipSource != "" && name == "connector.json" {
			read = append(read, zipSource)
		}
		r := Registry{
			System:  p.System,
			Version: p.Version,
			Source: strings.Join(read, ", ") + ", by dev.spatec.connect.Registries of " +
				connectModule.Maven.Project + ": " + p.How + ".",
			Options: p.Options,
		}
		sortOptions(r.Options)
		text, err := Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[path.Join(connectDir, name)] = text
	}
	return out, nil
}

// connectMavenRepository is Maven's local repository, where the module's build
// left the artifacts it was compiled from.
func connectMavenRepository() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding Maven's local repository: %w", err)
	}
	return filepath.Join(home, ".m2", "repository"), nil
}

// connectFileSHA256 is the hex sha256 of a file.
func connectFileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// connectUnzipJars writes the jars of the release zip's lib/ directory into dir
// and returns how the zip is named in a registry's source.
func connectUnzipJars(zipPath, dir string) (string, error) {
	sum, err := connectFileSHA256(zipPath)
	if err != nil {
		return "", err
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	n := 0
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".jar") || path.Base(path.Dir(f.Name)) != "lib" {
			continue
		}
		if err := unzipEntry(f, filepath.Join(dir, path.Base(f.Name))); err != nil {
			return "", fmt.Errorf("%s of %s: %w", f.Name, zipPath, err)
		}
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("%s holds no lib/*.jar", zipPath)
	}
	return fmt.Sprintf("%s (sha256:%s)", filepath.Base(zipPath), sum), nil
}
