package docker

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"spatec.dev/spatec/exec/engine"
)

// Create creates (does not start) a container with exactly the caps in spec.
// The engine's warnings come back in Created.Warnings: each one means a
// setting was not applied as asked.
//
// A spec with Memory but no MemorySwap is refused: the engine would quietly
// allow as much swap again as memory (C5).
func (e *Engine) Create(ctx context.Context, spec engine.ContainerSpec) (engine.Created, error) {
	if err := e.checkSpec(spec); err != nil {
		return engine.Created{}, err
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
		NetworkMode:   container.NetworkMode(spec.NetworkMode),
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyMode(spec.Restart)},
		CapAdd:        spec.CapAdd,
		ShmSize:       spec.ShmSize,
		Tmpfs:         spec.Tmpfs,
		Binds:         spec.Binds,
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
	for _, path := range slices.Sorted(maps.Keys(spec.Volumes)) {
		name := spec.Volumes[path]
		// Made here, with the container's labels, so that teardown finds
		// it by them; the engine answers with the volume when it exists.
		if _, err := e.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: spec.Labels}); err != nil {
			return engine.Created{}, fmt.Errorf("container %s: making volume %s for %s: %w", spec.Name, name, path, err)
		}
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{Type: mount.TypeVolume, Source: name, Target: path})
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
				return engine.Created{}, fmt.Errorf("container %s: publishing port %q: %w; write it as \"8081/tcp\"", spec.Name, cport, err)
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
				return engine.Created{}, fmt.Errorf("creating container %s: %w", spec.Name, &engine.ImageMissingError{Ref: spec.Image})
			}
		}
		return engine.Created{}, fmt.Errorf("creating container %s from image %s: %w", spec.Name, spec.Image, err)
	}
	if len(spec.Files) > 0 || len(spec.OpenDirs) > 0 {
		if err := e.copyFiles(ctx, resp.ID, spec.Files, spec.OpenDirs); err != nil {
			return engine.Created{ID: resp.ID, Warnings: resp.Warnings}, fmt.Errorf("container %s: %w", spec.Name, err)
		}
	}
	return engine.Created{ID: resp.ID, Warnings: resp.Warnings}, nil
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

func (e *Engine) checkSpec(spec engine.ContainerSpec) error {
	var problems []string
	if spec.Image == "" {
		problems = append(problems, "no image given")
	}
	if spec.NanoCPUs < 0 {
		problems = append(problems, fmt.Sprintf("NanoCPUs is %d; a CPU cap is positive, or 0 for none", spec.NanoCPUs))
	} else if spec.NanoCPUs > 0 {
		if err := engine.CheckCPUs(float64(spec.NanoCPUs)/1e9, e.hostCPUs); err != nil {
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
func (e *Engine) Inspect(ctx context.Context, id string) (engine.Container, error) {
	resp, err := e.cli.ContainerInspect(ctx, id)
	if err != nil {
		return engine.Container{}, fmt.Errorf("inspecting container %s: %w", id, err)
	}
	c := engine.Container{
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
		c.Restarts = resp.RestartCount
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
		c.Resources = engine.Resources{
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

// ReadFile copies one regular file out of a container, running or stopped,
// reading at most limit bytes of it.
func (e *Engine) ReadFile(ctx context.Context, id, file string, limit int64) ([]byte, error) {
	rc, _, err := e.cli.CopyFromContainer(ctx, id, file)
	if cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("reading %s from container %s: %w", file, id, engine.ErrNoFile)
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

// Restart stops a container, killing it after grace, and starts it again.
func (e *Engine) Restart(ctx context.Context, id string, grace time.Duration) error {
	secs := int(math.Ceil(grace.Seconds()))
	if err := e.cli.ContainerRestart(ctx, id, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("restarting container %s: %w", id, err)
	}
	return nil
}

// Crash kills a running container's main process with SIGKILL from the
// host, as a crash would: the engine sees it die on its own, so its
// restart policy applies.
func (e *Engine) Crash(_ context.Context, c engine.Container) error {
	if !c.Running || c.Pid <= 0 {
		return fmt.Errorf("container %s is not running", c.Name)
	}
	if err := syscall.Kill(c.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing container %s's process %d from the host: %w (spatec needs the right to signal the engine's processes)", c.Name, c.Pid, err)
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

// RunOnce runs a short-lived container to completion and returns its exit
// code and its whole output, then removes it whatever happened. It serves
// probes such as reading an entrant's version inside its image (C16) and
// the in-network ceiling pass; it does not verify caps, so create warnings
// are not reported. onLine, when not nil, is given each line of output as
// the container writes it.
func (e *Engine) RunOnce(ctx context.Context, spec engine.ContainerSpec, onLine func(string)) (exitCode int, logs string, err error) {
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
