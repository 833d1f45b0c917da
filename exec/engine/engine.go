// Package engine is spatec's adapter over the Docker Engine API, and the only
// package that imports the Docker SDK. Everything else speaks in the plain
// types of types.go, so that a move to another client module (such as
// github.com/moby/moby/client) touches this one file.
//
// The adapter applies exactly what it is given: caps are set as specified,
// MemorySwap included (the engine would otherwise make it twice Memory), and
// the engine's create warnings are handed back, because each one means a
// setting was dropped and the executor must refuse the run (contract C6).
package engine

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
)

// startHint says how to bring up an engine that does not answer.
const startHint = "start it with `bash .ci/services` or `systemctl start docker`, or point DOCKER_HOST at a running engine"

// pingTimeout bounds the reachability check in New, so that a socket that
// accepts but never answers fails fast instead of hanging the executor.
const pingTimeout = 10 * time.Second

// Engine is a connection to one Docker engine.
type Engine struct {
	cli *client.Client
	// apiVersion is the newest API version the engine speaks, from Ping.
	apiVersion string
	// hostCPUs is the engine's CPU count, read once in New so that every
	// Create can refuse a CPU cap above it with a readable message.
	hostCPUs int
}

type config struct {
	host string
}

// Option configures New.
type Option func(*config)

// WithHost connects to host ("unix:///path.sock", "tcp://h:2375") instead of
// DOCKER_HOST or the default socket.
func WithHost(host string) Option {
	return func(c *config) { c.host = host }
}

// New connects to the engine named by DOCKER_HOST (default
// unix:///var/run/docker.sock), negotiates the API version and checks that
// the engine answers. An engine that does not answer is an error naming the
// socket and saying how to start the engine.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	clientOpts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if cfg.host != "" {
		clientOpts = append(clientOpts, client.WithHost(cfg.host))
	}
	cli, err := client.NewClientWithOpts(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("configuring the Docker client (DOCKER_HOST=%q): %w", os.Getenv("DOCKER_HOST"), err)
	}

	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := cli.Ping(pingCtx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("cannot reach the Docker engine at %s (%s): %w; %s",
			cli.DaemonHost(), hostSource(cfg.host), err, startHint)
	}
	e := &Engine{cli: cli, apiVersion: ping.APIVersion}
	info, err := cli.Info(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("reading host facts from the Docker engine at %s: %w", cli.DaemonHost(), err)
	}
	e.hostCPUs = info.NCPU
	return e, nil
}

// hostSource says where the engine address came from, for messages.
func hostSource(explicit string) string {
	switch {
	case explicit != "":
		return "as configured"
	case os.Getenv("DOCKER_HOST") != "":
		return "from DOCKER_HOST"
	default:
		return "the default; DOCKER_HOST is unset"
	}
}

// Close releases the client's connections.
func (e *Engine) Close() error { return e.cli.Close() }

// Host is the engine address in use, e.g. "unix:///var/run/docker.sock".
func (e *Engine) Host() string { return e.cli.DaemonHost() }

// Info reads the host facts the engine reports.
func (e *Engine) Info(ctx context.Context) (HostInfo, error) {
	info, err := e.cli.Info(ctx)
	if err != nil {
		return HostInfo{}, fmt.Errorf("reading host facts from the Docker engine at %s: %w", e.Host(), err)
	}
	return HostInfo{
		EngineVersion:    info.ServerVersion,
		APIVersion:       e.apiVersion,
		ClientAPIVersion: e.cli.ClientVersion(),
		CgroupDriver:     info.CgroupDriver,
		CgroupVersion:    info.CgroupVersion,
		NCPU:             info.NCPU,
		MemTotal:         info.MemTotal,
		KernelVersion:    info.KernelVersion,
		OperatingSystem:  info.OperatingSystem,
		SwapLimit:        info.SwapLimit,
		CPUCFSQuota:      info.CPUCfsQuota,
		MemoryLimit:      info.MemoryLimit,
		Warnings:         info.Warnings,
	}, nil
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

// CreateNetwork creates a bridge network with labels and returns its ID.
func (e *Engine) CreateNetwork(ctx context.Context, name string, labels map[string]string) (string, error) {
	resp, err := e.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: labels})
	if err != nil {
		return "", fmt.Errorf("creating network %s: %w", name, err)
	}
	return resp.ID, nil
}

// RemoveNetwork removes a network by name or ID; one already gone is not an
// error.
func (e *Engine) RemoveNetwork(ctx context.Context, nameOrID string) error {
	if err := e.cli.NetworkRemove(ctx, nameOrID); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing network %s: %w", nameOrID, err)
	}
	return nil
}

// Create creates (does not start) a container with exactly the caps in spec.
// The engine's warnings come back in Created.Warnings: each one means a
// setting was not applied as asked.
//
// A spec with Memory but no MemorySwap is refused: the engine would quietly
// allow as much swap again as memory (C5).
func (e *Engine) Create(ctx context.Context, spec ContainerSpec) (Created, error) {
	if err := e.checkSpec(spec); err != nil {
		return Created{}, err
	}
	cfg := &container.Config{
		Image:      cmp.Or(spec.ImageID, spec.Image),
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Args,
		Env:        envList(spec.Env),
		Labels:     spec.Labels,
	}
	if h := spec.Health; h != nil {
		cfg.Healthcheck = &container.HealthConfig{
			Test:     append([]string{"CMD"}, h.Command...),
			Interval: h.Interval,
			Timeout:  h.Timeout,
			// The engine never gives up on its own: spatec decides how
			// long a service may take to become healthy.
			Retries: 1 << 30,
		}
	}
	hostCfg := &container.HostConfig{
		NetworkMode: container.NetworkMode(spec.NetworkMode),
		ShmSize:     spec.ShmSize,
		Tmpfs:       spec.Tmpfs,
		Binds:       spec.Binds,
		Resources: container.Resources{
			NanoCPUs:   spec.NanoCPUs,
			CpusetCpus: spec.CpusetCpus,
			Memory:     spec.Memory,
			MemorySwap: spec.MemorySwap,
		},
	}
	for _, h := range slices.Sorted(maps.Keys(spec.Hosts)) {
		hostCfg.ExtraHosts = append(hostCfg.ExtraHosts, h+":"+spec.Hosts[h])
	}
	if spec.NoFile > 0 {
		hostCfg.Ulimits = []*container.Ulimit{{Name: "nofile", Soft: spec.NoFile, Hard: spec.NoFile}}
	}
	if len(spec.Publish) > 0 {
		cfg.ExposedPorts = nat.PortSet{}
		hostCfg.PortBindings = nat.PortMap{}
		for cport, hport := range spec.Publish {
			p, err := nat.NewPort(nat.SplitProtoPort(cport))
			if err != nil {
				return Created{}, fmt.Errorf("container %s: publishing port %q: %w; write it as \"8081/tcp\"", spec.Name, cport, err)
			}
			cfg.ExposedPorts[p] = struct{}{}
			hostCfg.PortBindings[p] = []nat.PortBinding{{HostPort: hport}}
		}
	}
	var netCfg *network.NetworkingConfig
	if len(spec.NetworkAliases) > 0 {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			spec.NetworkMode: {Aliases: spec.NetworkAliases},
		}}
	}

	resp, err := e.cli.ContainerCreate(ctx, cfg, hostCfg, netCfg, nil, spec.Name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			// A 404 here is the image or the network; say which.
			if ok, ierr := e.ImageExists(ctx, spec.Image); ierr == nil && !ok {
				return Created{}, fmt.Errorf("creating container %s: %w", spec.Name, &ImageMissingError{Ref: spec.Image})
			}
		}
		return Created{}, fmt.Errorf("creating container %s from image %s: %w", spec.Name, spec.Image, err)
	}
	if len(spec.Files) > 0 || len(spec.OpenDirs) > 0 {
		if err := e.copyFiles(ctx, resp.ID, spec.Files, spec.OpenDirs); err != nil {
			return Created{ID: resp.ID, Warnings: resp.Warnings}, fmt.Errorf("container %s: %w", spec.Name, err)
		}
	}
	return Created{ID: resp.ID, Warnings: resp.Warnings}, nil
}

// copyFiles writes files, and directories open to every user, into a
// created container through the archive API.
func (e *Engine) copyFiles(ctx context.Context, id string, files map[string]string, openDirs []string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range openDirs {
		if !strings.HasPrefix(dir, "/") {
			return fmt.Errorf("directory %q: paths inside a container are absolute", dir)
		}
		// 01777 in tar's own mode bits: sticky, and open to every user.
		hdr := &tar.Header{Name: strings.Trim(dir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("packing %s: %w", dir, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasPrefix(name, "/") {
			return fmt.Errorf("file %q: paths inside a container are absolute", name)
		}
		body := files[name]
		hdr := &tar.Header{Name: strings.TrimPrefix(name, "/"), Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("packing %s: %w", name, err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			return fmt.Errorf("packing %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("packing files: %w", err)
	}
	if err := e.cli.CopyToContainer(ctx, id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("writing files %s and directories %s: %w", strings.Join(slices.Sorted(maps.Keys(files)), ", "), strings.Join(openDirs, ", "), err)
	}
	return nil
}

func (e *Engine) checkSpec(spec ContainerSpec) error {
	var problems []string
	if spec.Image == "" {
		problems = append(problems, "no image given")
	}
	if spec.NanoCPUs < 0 {
		problems = append(problems, fmt.Sprintf("NanoCPUs is %d; a CPU cap is positive, or 0 for none", spec.NanoCPUs))
	} else if spec.NanoCPUs > 0 {
		if err := CheckCPUs(float64(spec.NanoCPUs)/1e9, e.hostCPUs); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if spec.Memory > 0 && spec.MemorySwap == 0 {
		problems = append(problems, fmt.Sprintf("Memory is %d but MemorySwap is unset; set MemorySwap to %d for no swap, since the engine would otherwise allow %d", spec.Memory, spec.Memory, 2*spec.Memory))
	}
	if spec.NetworkMode == "host" && len(spec.NetworkAliases) > 0 {
		problems = append(problems, "network aliases need a named network, not the host network")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("container %s: %s", spec.Name, strings.Join(problems, "; "))
}

// envList turns env into KEY=VALUE entries sorted by key, so the same spec
// always creates the same container config.
func envList(env map[string]string) []string {
	if len(env) == 0 {
		return nil
	}
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	return list
}

// Start starts a created container.
func (e *Engine) Start(ctx context.Context, id string) error {
	if err := e.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("starting container %s: %w", id, err)
	}
	return nil
}

// Inspect reads a container's state and its caps as applied.
func (e *Engine) Inspect(ctx context.Context, id string) (Container, error) {
	resp, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return Container{}, fmt.Errorf("inspecting container %s: %w", id, err)
	}
	c := Container{
		ID:      resp.ID,
		Name:    strings.TrimPrefix(resp.Name, "/"),
		ImageID: resp.Image,
	}
	if resp.Config != nil {
		c.Image = resp.Config.Image
		c.Labels = resp.Config.Labels
	}
	if s := resp.State; s != nil {
		c.Status = string(s.Status)
		c.Running = s.Running
		c.Pid = s.Pid
		c.ExitCode = s.ExitCode
		c.OOMKilled = s.OOMKilled
		c.Error = s.Error
		c.StartedAt = parseTime(s.StartedAt)
		c.FinishedAt = parseTime(s.FinishedAt)
		if h := s.Health; h != nil {
			c.Health = string(h.Status)
			if n := len(h.Log); n > 0 && h.Log[n-1].ExitCode != 0 {
				c.HealthOutput = strings.TrimSpace(h.Log[n-1].Output)
			}
		}
	}
	if ns := resp.NetworkSettings; ns != nil {
		for name, ep := range ns.Networks {
			if ep != nil && ep.IPAddress != "" {
				if c.Addresses == nil {
					c.Addresses = map[string]string{}
				}
				c.Addresses[name] = ep.IPAddress
			}
		}
	}
	if h := resp.HostConfig; h != nil {
		c.NetworkMode = string(h.NetworkMode)
		c.Resources = Resources{
			NanoCPUs:   h.NanoCPUs,
			CPUQuota:   h.CPUQuota,
			CPUPeriod:  h.CPUPeriod,
			CpusetCpus: h.CpusetCpus,
			Memory:     h.Memory,
			MemorySwap: h.MemorySwap,
			ShmSize:    h.ShmSize,
		}
	}
	return c, nil
}

// parseTime reads the engine's timestamps; the engine writes the zero time
// for "never", which stays zero here.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// Wait blocks until a started container is not running and returns its exit
// code. Call it after Start: a container that was only created counts as not
// running.
func (e *Engine) Wait(ctx context.Context, id string) (int, error) {
	respC, errC := e.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case resp := <-respC:
		if resp.Error != nil && resp.Error.Message != "" {
			return int(resp.StatusCode), fmt.Errorf("waiting for container %s: the engine reports: %s", id, resp.Error.Message)
		}
		return int(resp.StatusCode), nil
	case err := <-errC:
		return -1, fmt.Errorf("waiting for container %s: %w", id, err)
	}
}

// Logs returns the last lines of a container's output, stdout and stderr
// together in the order the engine stored them; lines <= 0 returns all of
// it.
func (e *Engine) Logs(ctx context.Context, id string, lines int) (string, error) {
	tail := "all"
	if lines > 0 {
		tail = strconv.Itoa(lines)
	}
	rc, err := e.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return "", fmt.Errorf("reading the logs of container %s: %w", id, err)
	}
	defer rc.Close()
	// Containers are created without a TTY, so the stream is multiplexed.
	var buf bytes.Buffer
	if _, err := stdcopy.StdCopy(&buf, &buf, rc); err != nil {
		return buf.String(), fmt.Errorf("reading the logs of container %s: %w", id, err)
	}
	return buf.String(), nil
}

// ErrNoFile says a container has no file at the path asked for.
var ErrNoFile = errors.New("no such file in the container")

// ReadFile copies one regular file out of a container, running or stopped,
// reading at most limit bytes of it.
func (e *Engine) ReadFile(ctx context.Context, id, file string, limit int64) ([]byte, error) {
	rc, _, err := e.cli.CopyFromContainer(ctx, id, file)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("reading %s from container %s: %w", file, id, ErrNoFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s from container %s: %w", file, id, err)
	}
	defer rc.Close()
	// The engine sends a tar archive holding the one file.
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		return nil, fmt.Errorf("reading %s from container %s: %w", file, id, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("reading %s from container %s: it is not a regular file", file, id)
	}
	b, err := io.ReadAll(io.LimitReader(tr, limit))
	if err != nil {
		return nil, fmt.Errorf("reading %s from container %s: %w", file, id, err)
	}
	return b, nil
}

// Stop asks a container to stop (SIGTERM), and kills it after grace.
func (e *Engine) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int(math.Ceil(grace.Seconds()))
	if err := e.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("stopping container %s: %w", id, err)
	}
	return nil
}

// Pause freezes every process of a running container (the freezer
// cgroup), as a stalled system looks from outside; Unpause thaws them.
func (e *Engine) Pause(ctx context.Context, id string) error {
	if err := e.cli.ContainerPause(ctx, id); err != nil {
		return fmt.Errorf("pausing container %s: %w", id, err)
	}
	return nil
}

// Unpause thaws a paused container.
func (e *Engine) Unpause(ctx context.Context, id string) error {
	if err := e.cli.ContainerUnpause(ctx, id); err != nil {
		return fmt.Errorf("unpausing container %s: %w", id, err)
	}
	return nil
}

// Kill sends signal ("KILL", "TERM") to a container's main process.
func (e *Engine) Kill(ctx context.Context, id, signal string) error {
	if err := e.cli.ContainerKill(ctx, id, signal); err != nil {
		return fmt.Errorf("sending %s to container %s: %w", signal, id, err)
	}
	return nil
}

// Remove removes a container, running or not, with its anonymous volumes.
// One already gone is not an error.
func (e *Engine) Remove(ctx context.Context, id string) error {
	err := e.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing container %s: %w", id, err)
	}
	return nil
}

// labelFilter selects objects labelled key=value, or carrying key at all
// when value is empty.
func labelFilter(key, value string) filters.Args {
	if value == "" {
		return filters.NewArgs(filters.Arg("label", key))
	}
	return filters.NewArgs(filters.Arg("label", key+"="+value))
}

// ListByLabel lists the containers (running or not) and networks labelled
// key=value (any value when value is empty).
func (e *Engine) ListByLabel(ctx context.Context, key, value string) (Labelled, error) {
	var out Labelled
	f := labelFilter(key, value)
	cs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return out, fmt.Errorf("listing containers labelled %s=%s: %w", key, value, err)
	}
	for _, c := range cs {
		out.Containers = append(out.Containers, containerName(c))
	}
	ns, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return out, fmt.Errorf("listing networks labelled %s=%s: %w", key, value, err)
	}
	for _, n := range ns {
		out.Networks = append(out.Networks, n.Name)
	}
	return out, nil
}

// ListOwned lists the containers (running or not) and networks carrying the
// label key, whatever its value, with their labels and creation times.
func (e *Engine) ListOwned(ctx context.Context, key string) ([]Owned, error) {
	if key == "" {
		return nil, errors.New("listing by label: no label key given")
	}
	f := labelFilter(key, "")
	cs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers labelled %s: %w", key, err)
	}
	var out []Owned
	for _, c := range cs {
		out = append(out, Owned{Kind: "container", ID: c.ID, Name: containerName(c), Labels: c.Labels, Created: time.Unix(c.Created, 0)})
	}
	ns, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing networks labelled %s: %w", key, err)
	}
	for _, n := range ns {
		out = append(out, Owned{Kind: "network", ID: n.ID, Name: n.Name, Labels: n.Labels, Created: n.Created})
	}
	return out, nil
}

func containerName(c container.Summary) string {
	if len(c.Names) > 0 {
		return strings.TrimPrefix(c.Names[0], "/")
	}
	return c.ID
}

// RemoveByLabel force-removes every container and then every network
// labelled key=value, and checks that nothing under the label is left. It
// carries on past failures and reports all of them, so one stuck object
// never hides another.
func (e *Engine) RemoveByLabel(ctx context.Context, key, value string) error {
	if key == "" {
		return errors.New("removing by label: no label key given; an empty key would select everything on the engine")
	}
	sel := key + "=" + value
	f := labelFilter(key, value)
	var errs []error

	cs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing containers: %w", err))
	}
	for _, c := range cs {
		if err := e.Remove(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", containerName(c), err))
		}
	}
	// Networks go after the containers, which would otherwise hold them.
	ns, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing networks: %w", err))
	}
	for _, n := range ns {
		if err := e.RemoveNetwork(ctx, n.ID); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
		}
	}

	if left, err := e.ListByLabel(ctx, key, value); err != nil {
		errs = append(errs, err)
	} else if !left.Empty() {
		errs = append(errs, fmt.Errorf("still present after removal: containers %v, networks %v", left.Containers, left.Networks))
	}
	if len(errs) > 0 {
		return fmt.Errorf("tearing down everything labelled %s: %w", sel, errors.Join(errs...))
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

// RegistryDigest asks ref's registry, through the engine, which manifest
// digest ref resolves to now: a tag's current content, without pulling it.
func (e *Engine) RegistryDigest(ctx context.Context, ref string) (string, error) {
	resp, err := e.cli.DistributionInspect(ctx, ref, "")
	if err != nil {
		return "", fmt.Errorf("asking the registry for %s: %w", ref, err)
	}
	return string(resp.Descriptor.Digest), nil
}

// Pull pulls ref from its registry, reporting bytes done of the total
// known so far, over every layer, to progress (when not nil). Errors
// arrive inside the engine's stream, which is read to its end.
func (e *Engine) Pull(ctx context.Context, ref string, progress func(done, total int64)) error {
	rc, err := e.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	defer rc.Close()
	type layer struct{ done, total int64 }
	layers := map[string]layer{}
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			ID             string `json:"id"`
			Status         string `json:"status"`
			Error          string `json:"error"`
			ProgressDetail struct {
				Current int64 `json:"current"`
				Total   int64 `json:"total"`
			} `json:"progressDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("pulling %s: reading the engine's answer: %w", ref, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("pulling %s: the engine reports: %s", ref, msg.Error)
		}
		if msg.Status == "Downloading" && msg.ID != "" && progress != nil {
			layers[msg.ID] = layer{msg.ProgressDetail.Current, msg.ProgressDetail.Total}
			var done, total int64
			for _, l := range layers {
				done, total = done+l.done, total+l.total
			}
			progress(done, total)
		}
	}
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

// RemoveImage removes the image ref (its tag, and the image when no other
// tag holds it). A missing image is not an error.
func (e *Engine) RemoveImage(ctx context.Context, ref string) error {
	if _, err := e.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("removing image %s: %w", ref, err)
	}
	return nil
}

// RemoveUnnamed removes image id when no tag names it any more and no
// container uses it: what building again under the same tag leaves behind,
// which would otherwise fill a bench host's disk one rebuild at a time. An
// image still named or still in use stays, and that is not an error.
func (e *Engine) RemoveUnnamed(ctx context.Context, id string) error {
	img, err := e.cli.ImageInspect(ctx, id)
	switch {
	case cerrdefs.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("looking up the replaced image %s: %w", id, err)
	case len(img.RepoTags) > 0:
		return nil
	}
	if _, err := e.cli.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("removing the replaced image %s: %w", id, err)
	}
	return nil
}

// ImageExists reports whether the engine holds the image ref.
func (e *Engine) ImageExists(ctx context.Context, ref string) (bool, error) {
	if _, err := e.cli.ImageInspect(ctx, ref); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking up image %s: %w", ref, err)
	}
	return true, nil
}

// ImageDigest identifies the image ref for records: its ID, repository
// digests and labels. A missing image is an *ImageMissingError.
func (e *Engine) ImageDigest(ctx context.Context, ref string) (Image, error) {
	resp, err := e.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Image{}, &ImageMissingError{Ref: ref}
		}
		return Image{}, fmt.Errorf("looking up image %s: %w", ref, err)
	}
	img := Image{ID: resp.ID, RepoDigests: resp.RepoDigests}
	if resp.Config != nil {
		img.Labels = resp.Config.Labels
	}
	return img, nil
}

// RunOnce runs a short-lived container to completion and returns its exit
// code and its whole output, then removes it whatever happened. It serves
// probes such as reading an entrant's version inside its image (C16) and
// the in-network ceiling pass; it does not verify caps, so create warnings
// are not reported. onLine, when not nil, is given each line of output as
// the container writes it.
func (e *Engine) RunOnce(ctx context.Context, spec ContainerSpec, onLine func(string)) (exitCode int, logs string, err error) {
	created, err := e.Create(ctx, spec)
	if err != nil {
		return -1, "", err
	}
	defer func() {
		// Remove even when ctx is cancelled: a probe must not outlive the run.
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rmErr := e.Remove(rmCtx, created.ID); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
	}()
	if err := e.Start(ctx, created.ID); err != nil {
		return -1, "", err
	}
	followed := make(chan struct{})
	if onLine != nil {
		go func() {
			defer close(followed)
			e.follow(ctx, created.ID, onLine)
		}()
	} else {
		close(followed)
	}
	code, err := e.Wait(ctx, created.ID)
	<-followed
	if err != nil {
		return code, "", err
	}
	logs, err = e.Logs(ctx, created.ID, 0)
	return code, logs, err
}

// follow hands each line a container writes to onLine until its output
// ends (the container stopped) or ctx is done.
func (e *Engine) follow(ctx context.Context, id string, onLine func(string)) {
	rc, err := e.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return
	}
	defer rc.Close()
	lw := &lineWriter{onLine: onLine}
	_, _ = stdcopy.StdCopy(lw, lw, rc)
	lw.flush()
}

// lineWriter calls onLine for every complete line written to it.
type lineWriter struct {
	onLine  func(string)
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.onLine(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.onLine(string(w.partial))
		w.partial = nil
	}
}

// LoadImage loads an image archive (the format `docker save` writes:
// manifest.json, the image config and its layers) through the engine's API
// and returns the IDs of the images it loaded. Errors arrive inside the
// response stream, which is read to its end.
func (e *Engine) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	resp, err := e.cli.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, fmt.Errorf("loading an image archive: %w", err)
	}
	defer resp.Body.Close()
	var ids []string
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("loading an image archive: reading the engine's answer: %w", err)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			msg.Error = msg.ErrorDetail.Message
		}
		if msg.Error != "" {
			return nil, fmt.Errorf("loading an image archive: the engine reports: %s", msg.Error)
		}
		// "Loaded image ID: sha256:…" or "Loaded image: name:tag".
		if id, ok := strings.CutPrefix(strings.TrimSpace(msg.Stream), "Loaded image ID: "); ok {
			ids = append(ids, id)
		} else if ref, ok := strings.CutPrefix(strings.TrimSpace(msg.Stream), "Loaded image: "); ok {
			ids = append(ids, ref)
		}
	}
	return ids, nil
}

// SaveImage writes the image ref as an archive in the format LoadImage
// reads (`docker save`), for another runtime to import.
func (e *Engine) SaveImage(ctx context.Context, ref string) (io.ReadCloser, error) {
	rc, err := e.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, fmt.Errorf("saving image %s: %w", ref, err)
	}
	return rc, nil
}

// BuildScratchImage builds an image FROM scratch holding img.Files, through
// the engine's classic builder: no registry, no base image. It returns the
// image ID.
func (e *Engine) BuildScratchImage(ctx context.Context, img ScratchImage) (string, error) {
	buildCtx, err := scratchContext(img)
	if err != nil {
		return "", fmt.Errorf("building image %s: %w", img.Tag, err)
	}
	return e.build(ctx, img.Tag, bytes.NewReader(buildCtx), img.Labels)
}

// scratchContext writes the build context in memory: the files under
// rootfs/ and a generated Dockerfile copying them to /.
func scratchContext(img ScratchImage) ([]byte, error) {
	if img.Tag == "" {
		return nil, errors.New("no tag given")
	}
	if len(img.Files) == 0 {
		return nil, errors.New("no files given; a scratch image holds only the files it is given")
	}
	if len(img.Entrypoint) == 0 {
		return nil, errors.New("no entrypoint given; a scratch image has no shell to fall back on")
	}
	files := make(map[string][]byte, len(img.Files))
	for name, data := range img.Files {
		clean := path.Clean("/" + name)
		if clean == "/" || slices.Contains(strings.Split(name, "/"), "..") {
			return nil, fmt.Errorf("file path %q: want a path inside the image such as \"burn\" or \"etc/app.conf\"", name)
		}
		files[clean] = data
	}
	if _, ok := files[img.Entrypoint[0]]; !ok {
		return nil, fmt.Errorf("entrypoint %q is not one of the image's files %v; give its absolute path inside the image", img.Entrypoint[0], slices.Sorted(maps.Keys(files)))
	}
	entrypoint, err := json.Marshal(img.Entrypoint)
	if err != nil {
		return nil, fmt.Errorf("encoding the entrypoint: %w", err)
	}
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY rootfs/ /\nENTRYPOINT %s\n", entrypoint)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// A fixed time keeps the context identical for identical files, so the
	// builder's cache applies.
	var epoch time.Time
	add := func(hdr *tar.Header, data []byte) error {
		hdr.ModTime = epoch
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), Typeflag: tar.TypeReg}, []byte(dockerfile)); err != nil {
		return nil, fmt.Errorf("writing the build context: %w", err)
	}
	dirs := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		// Parent directories first, each once.
		for dir := path.Dir(name); dir != "/"; dir = path.Dir(dir) {
			if dirs[dir] {
				break
			}
			dirs[dir] = true
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(dirs)) {
		if err := add(&tar.Header{Name: "rootfs" + dir + "/", Mode: 0o755, Typeflag: tar.TypeDir}, nil); err != nil {
			return nil, fmt.Errorf("writing the build context: %w", err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if err := add(&tar.Header{Name: "rootfs" + name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}, data); err != nil {
			return nil, fmt.Errorf("writing the build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing the build context: %w", err)
	}
	return buf.Bytes(), nil
}

// BuildContextDir builds the image tag from a build context directory with
// its own Dockerfile, through the engine's classic builder, and returns the
// image ID. Without a registry the Dockerfile can only start FROM scratch or
// from an image already on the engine.
func (e *Engine) BuildContextDir(ctx context.Context, tag, dir string, labels map[string]string) (string, error) {
	buildCtx, err := tarDir(dir)
	if err != nil {
		return "", fmt.Errorf("building image %s from %s: %w", tag, dir, err)
	}
	return e.build(ctx, tag, bytes.NewReader(buildCtx), labels)
}

// tarDir packs a directory as a build context.
func tarDir(dir string) ([]byte, error) {
	if _, err := os.Stat(filepath.Join(dir, "Dockerfile")); err != nil {
		return nil, fmt.Errorf("a build context needs a Dockerfile: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return fmt.Errorf("%s: only files, directories and symlinks can go into a build context", p)
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("packing the build context: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("packing the build context: %w", err)
	}
	return buf.Bytes(), nil
}

// build sends a build context to the engine's classic builder (BuildKit
// needs a session this adapter does not run) and drains the response
// stream, where build errors arrive: the HTTP status is 200 either way.
func (e *Engine) build(ctx context.Context, tag string, buildCtx io.Reader, labels map[string]string) (string, error) {
	// What tag names now, so that a rebuild does not leave it behind.
	prev, err := e.cli.ImageInspect(ctx, tag)
	if err != nil && !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("building image %s: looking up the image it names now: %w", tag, err)
	}
	resp, err := e.cli.ImageBuild(ctx, buildCtx, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", fmt.Errorf("building image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	id, err := drainBuild(resp.Body)
	if err != nil {
		return "", fmt.Errorf("building image %s: %w", tag, err)
	}
	if id == "" {
		// Engines that do not send the ID in the stream still have the tag.
		img, err := e.ImageDigest(ctx, tag)
		if err != nil {
			return "", fmt.Errorf("building image %s: reading the built image's ID: %w", tag, err)
		}
		id = img.ID
	}
	if prev.ID != "" && prev.ID != id && prev.Config != nil && sharesKey(prev.Config.Labels, labels) {
		if err := e.RemoveUnnamed(ctx, prev.ID); err != nil {
			return "", fmt.Errorf("building image %s: %w", tag, err)
		}
	}
	return id, nil
}

// sharesKey tells whether an image's labels carry one of the keys a build
// sets: whether this tool built it, for the same purpose.
func sharesKey(have, build map[string]string) bool {
	for k := range build {
		if _, ok := have[k]; ok {
			return true
		}
	}
	return false
}

// buildMessage is one line of the engine's build stream (the JSON message
// format of the Engine API).
type buildMessage struct {
	Stream      string `json:"stream"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux *struct {
		ID string `json:"ID"`
	} `json:"aux"`
}

// buildTailLines is how much of the build output an error quotes.
const buildTailLines = 5

// drainBuild reads the build stream to its end, returning the built image's
// ID when the stream names it, or the error the stream carries together
// with the build output that led to it.
func drainBuild(r io.Reader) (string, error) {
	var id string
	var tail []string
	dec := json.NewDecoder(r)
	for {
		var msg buildMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return id, nil
			}
			return "", fmt.Errorf("reading the build output: %w", err)
		}
		for line := range strings.SplitSeq(msg.Stream, "\n") {
			// "--->" only separates steps; it says nothing in an error.
			if line = strings.TrimSpace(line); line != "" && line != "--->" {
				tail = append(tail, line)
			}
		}
		if len(tail) > buildTailLines {
			tail = tail[len(tail)-buildTailLines:]
		}
		if msg.Aux != nil && msg.Aux.ID != "" {
			id = msg.Aux.ID
		}
		text := msg.Error
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			text = msg.ErrorDetail.Message
		}
		if text != "" {
			return "", fmt.Errorf("the engine reports: %s (build output before it: %s)", strings.TrimSpace(text), strings.Join(tail, " | "))
		}
	}
}
