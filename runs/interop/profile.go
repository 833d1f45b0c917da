package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// Profile is an environment profile of the reference harness
// (environments/<env_id>.toml, harness/src/environment.rs): the host it
// publishes, and the infrastructure it declares. A schema-2 record names
// its profile by env_id and by env_digest, the first twelve hex characters
// of the sha256 of the file's bytes, so a profile states the host of
// exactly the records whose env_digest is its digest.
type Profile struct {
	// Path is the file as given, and Digest the harness's digest of its
	// bytes.
	Path   string `toml:"-"`
	Digest string `toml:"-"`
	ID     string `toml:"id"`
	Class  string `toml:"class"`
	Host   struct {
		Description string `toml:"description"`
		CPU         string `toml:"cpu"`
		Cores       int    `toml:"cores"`
		Memory      string `toml:"memory"`
		OS          string `toml:"os"`
		Arch        string `toml:"arch"`
	} `toml:"host"`
	Infra struct {
		Partitions int `toml:"partitions"`
		Broker     struct {
			Kind  string `toml:"kind"`
			Image string `toml:"image"`
		} `toml:"broker"`
		ClickHouse struct {
			Image string `toml:"image"`
		} `toml:"clickhouse"`
	} `toml:"infra"`
}

// ReadProfile reads the reference harness's environment profile at path.
func ReadProfile(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the reference harness's environment profile: %w", err)
	}
	var p Profile
	if err := toml.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s is not an environment profile of the reference harness (environments/<env_id>.toml): %w", path, err)
	}
	if p.ID == "" || p.Host.Cores <= 0 {
		return nil, fmt.Errorf("%s is not an environment profile of the reference harness: it names no id or no host cores", path)
	}
	sum := sha256.Sum256(b)
	p.Path, p.Digest = path, hex.EncodeToString(sum[:6])
	return &p, nil
}

// Names reports whether the profile is the declaration a record of the
// environment env_id at env_digest names.
func (p *Profile) Names(envID, envDigest string) bool {
	return p.ID == envID && p.Digest == envDigest
}

// Facts are what the profile states of its host and infrastructure beyond
// a record: the host's cores, memory and architecture, and the images by
// repository and tag.
func (p *Profile) Facts() Facts {
	var fs Facts
	from := fmt.Sprintf("the harness's profile %s (digest %s)", p.Path, p.Digest)
	fs.set(FactHostCores, strconv.Itoa(p.Host.Cores), strconv.Itoa(p.Host.Cores), from)
	if b, ok := memorySize(p.Host.Memory); ok {
		fs.set(FactHostMemory, strconv.FormatInt(b, 10), memoryText(b), from)
	}
	fs.set(FactHostArch, p.Host.Arch, p.Host.Arch, from)
	if p.Infra.Broker.Image != "" {
		fs.set(FactBrokerImage, ImageName(p.Infra.Broker.Image), p.Infra.Broker.Image, from)
	}
	if p.Infra.ClickHouse.Image != "" {
		fs.set(FactClickHouseImage, ImageName(p.Infra.ClickHouse.Image), p.Infra.ClickHouse.Image, from)
	}
	return fs
}

// WithProfile adds what the profile states to the entry's facts, when it
// is the declaration the entry's record names; it reports whether it was.
func (e *Entry) WithProfile(p *Profile) bool {
	if e.Source != SourceSchema2 || !p.Names(e.Env, e.EnvDigest) {
		return false
	}
	for _, f := range p.Facts() {
		e.Facts.set(f.Key, f.Value, f.Shown, f.From)
	}
	return true
}
