// Package docker is spatec's adapter over the Docker Engine API, and the only
// package that imports the Docker SDK. Everything else speaks in the plain
// types of package engine, so that a move to another client module (such as
// github.com/moby/moby/client) touches this one file.
//
// The adapter applies exactly what it is given: caps are set as specified,
// MemorySwap included (the engine would otherwise make it twice Memory), and
// the engine's create warnings are handed back, because each one means a
// setting was dropped and the executor must refuse the run (contract C6).
package docker

import (
	"context"
	"fmt"
	"os"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"spatec.dev/spatec/exec/engine"
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
func (e *Engine) Info(ctx context.Context) (engine.HostInfo, error) {
	info, err := e.cli.Info(ctx)
	if err != nil {
		return engine.HostInfo{}, fmt.Errorf("reading host facts from the Docker engine at %s: %w", e.Host(), err)
	}
	return engine.HostInfo{
		EngineVersion:    info.ServerVersion,
		APIVersion:       e.apiVersion,
		ClientAPIVersion: e.cli.ClientVersion(),
		CgroupDriver:     info.CgroupDriver,
		CgroupVersion:    info.CgroupVersion,
		NCPU:             info.NCPU,
		MemTotal:         info.MemTotal,
		KernelVersion:    info.KernelVersion,
		OperatingSystem:  info.OperatingSystem,
		Architecture:     info.Architecture,
		SwapLimit:        info.SwapLimit,
		CPUCFSQuota:      info.CPUCfsQuota,
		MemoryLimit:      info.MemoryLimit,
		Warnings:         info.Warnings,
	}, nil
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
