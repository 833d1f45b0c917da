// Package engine is what spatec asks of a container engine, and the types
// it asks in: the Engine interface, implemented by docker (the Docker
// Engine API) and kube (a Kubernetes cluster), beside this package.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Engine is what the executor needs of the container  *Engine
// implements it against the Docker Engine API.
type Engine interface {
	Info(ctx context.Context) (HostInfo, error)
	CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error)
	Create(ctx context.Context, spec ContainerSpec) (Created, error)
	Start(ctx context.Context, id string) error
	Inspect(ctx context.Context, id string) (Container, error)
	Wait(ctx context.Context, id string) (int, error)
	Logs(ctx context.Context, id string, lines int) (string, error)
	ReadFile(ctx context.Context, id, file string, limit int64) ([]byte, error)
	Stop(ctx context.Context, id string, grace time.Duration) error
	RemoveByLabel(ctx context.Context, key, value string) error
	ListOwned(ctx context.Context, key string) ([]Owned, error)
	ImageExists(ctx context.Context, ref string) (bool, error)
	Pull(ctx context.Context, ref string, progress func(done, total int64)) error
	ImageDigest(ctx context.Context, ref string) (Image, error)
	RunOnce(ctx context.Context, spec ContainerSpec, onLine func(string)) (int, string, error)
	BuildScratchImage(ctx context.Context, img ScratchImage) (string, error)
	LoadImage(ctx context.Context, archive io.Reader) ([]string, error)
	RemoveUnnamed(ctx context.Context, id string) error
	BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error)
}

// CheckCPUs refuses a CPU count the host cannot give. The engine rejects
// such a cap too, but with a message that does not say what to do.
func CheckCPUs(requested float64, hostCPUs int) error {
	asked := strconv.FormatFloat(requested, 'f', -1, 64)
	switch {
	case math.IsNaN(requested) || math.IsInf(requested, 0) || requested <= 0:
		return fmt.Errorf("the plan asks %s CPUs; a CPU cap must be a positive number", asked)
	case hostCPUs <= 0:
		return fmt.Errorf("the plan asks %s CPUs; the engine reports %d CPUs for this host, so the cap cannot be checked", asked, hostCPUs)
	case requested > float64(hostCPUs):
		return fmt.Errorf("the plan asks %s CPUs; this host has %d; use an environment sized for it", asked, hostCPUs)
	}
	return nil
}

// ImageMissingError says an image is not on the engine. spatec pulls
// nothing: images are built or loaded beforehand.
type ImageMissingError struct {
	Ref string
}

func (e *ImageMissingError) Error() string {
	return fmt.Sprintf("image %s is not present on this engine; build or load it first: "+
		"`docker build -t %s DIR` or `docker load -i FILE.tar` (spatec pulls nothing from a registry)", e.Ref, e.Ref)
}

// Built looks up ref with lookup (an Engine's ImageDigest) and reports
// whether it carries label with the value digest: an image spatec built
// from a declaration of that digest, to be used as it is. A missing image
// is not an error.
func Built(ctx context.Context, lookup func(context.Context, string) (Image, error), ref, label, digest string) (Image, bool, error) {
	img, err := lookup(ctx, ref)
	var missing *ImageMissingError
	switch {
	case err == nil:
		return img, img.Labels[label] == digest, nil
	case errors.As(err, &missing):
		return Image{}, false, nil
	}
	return Image{}, false, err
}

// ErrNoFile says a container has no file at the path asked for.
var ErrNoFile = errors.New("no such file in the container")

// Crasher is what a failure scenario that kills an arm's data plane
// needs of an engine: to end a container's main process from outside the
// engine, as a crash or the OOM killer would, so that the engine sees it
// die on its own and the container's restart policy decides what happens
// next (an engine's own kill is a stop it would not undo). Both engines
// have it. It is given the container as just inspected, running.
type Crasher interface {
	Crash(ctx context.Context, c Container) error
}

// Replacer is what a failure scenario that deletes an arm's pod needs of
// an engine: a container run under a controller (ContainerSpec.Replaced)
// has its current instance deleted as an operator's delete would, its
// process given its grace to stop, and the controller makes a new one.
// The Kubernetes engine has it (a ReplicaSet's pod); it is given the
// container as just inspected, running.
type Replacer interface {
	Replace(ctx context.Context, c Container) error
}

// Faults is what a failure scenario needs of an engine beyond running
// containers: to break one mid-drain as an outage would, and to mend it.
// The Docker engine has it; on an engine without it a scenario can only
// crash the data plane (Crasher).
type Faults interface {
	// Restart stops a container (SIGKILL after grace) and starts it
	// again, as `docker restart` does.
	Restart(ctx context.Context, id string, grace time.Duration) error
	// Kill sends a signal to the container's main process as the engine
	// does it: a container killed so is stopped, and its restart policy
	// does not start it again.
	Kill(ctx context.Context, id, signal string) error
	// Pause freezes every process of a container; Unpause thaws them.
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
}
