package exec

import (
	"context"
	"io"
	"time"

	"spatec.dev/spatec/exec/engine"
)

// Engine is what the executor needs of the container engine. *engine.Engine
// implements it against the Docker Engine API.
type Engine interface {
	Info(ctx context.Context) (engine.HostInfo, error)
	CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error)
	Create(ctx context.Context, spec engine.ContainerSpec) (engine.Created, error)
	Start(ctx context.Context, id string) error
	Inspect(ctx context.Context, id string) (engine.Container, error)
	Wait(ctx context.Context, id string) (int, error)
	Logs(ctx context.Context, id string, lines int) (string, error)
	ReadFile(ctx context.Context, id, file string, limit int64) ([]byte, error)
	Stop(ctx context.Context, id string, grace time.Duration) error
	RemoveByLabel(ctx context.Context, key, value string) error
	ListOwned(ctx context.Context, key string) ([]engine.Owned, error)
	ImageExists(ctx context.Context, ref string) (bool, error)
	Pull(ctx context.Context, ref string, progress func(done, total int64)) error
	ImageDigest(ctx context.Context, ref string) (engine.Image, error)
	RunOnce(ctx context.Context, spec engine.ContainerSpec, onLine func(string)) (int, string, error)
	BuildScratchImage(ctx context.Context, img engine.ScratchImage) (string, error)
	LoadImage(ctx context.Context, archive io.Reader) ([]string, error)
	RemoveUnnamed(ctx context.Context, id string) error
	BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error)
}

// Labels spatec puts on everything a run creates; teardown removes by
// LabelRun, so nothing a run started can be missed.
const (
	LabelRun     = "dev.spatec.run"
	LabelPlan    = "dev.spatec.plan"
	LabelEntrant = "dev.spatec.entrant"
	LabelRole    = "dev.spatec.role"
	// LabelProcess names the spatec process that created the object, so
	// that what a killed run left behind can be told from what a live one
	// is using (Runner.Sweep).
	LabelProcess = "dev.spatec.process"
)
