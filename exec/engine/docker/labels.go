package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"spatec.dev/spatec/exec/engine"
)

// labelFilter selects objects labelled key=value, or carrying key at all
// when value is empty.
func labelFilter(key, value string) filters.Args {
	if value == "" {
		return filters.NewArgs(filters.Arg("label", key))
	}
	return filters.NewArgs(filters.Arg("label", key+"="+value))
}

// ListByLabel lists the containers (running or not), networks and volumes
// labelled key=value (any value when value is empty).
func (e *Engine) ListByLabel(ctx context.Context, key, value string) (engine.Labelled, error) {
	var out engine.Labelled
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
	vs, err := e.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return out, fmt.Errorf("listing volumes labelled %s=%s: %w", key, value, err)
	}
	for _, v := range vs.Volumes {
		out.Volumes = append(out.Volumes, v.Name)
	}
	return out, nil
}

// ListOwned lists the containers (running or not), networks and volumes
// carrying the label key, whatever its value, with their labels and
// creation times.
func (e *Engine) ListOwned(ctx context.Context, key string) ([]engine.Owned, error) {
	if key == "" {
		return nil, errors.New("listing by label: no label key given")
	}
	f := labelFilter(key, "")
	cs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing containers labelled %s: %w", key, err)
	}
	var out []engine.Owned
	for _, c := range cs {
		out = append(out, engine.Owned{Kind: "container", ID: c.ID, Name: containerName(c), Labels: c.Labels, Created: time.Unix(c.Created, 0)})
	}
	ns, err := e.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing networks labelled %s: %w", key, err)
	}
	for _, n := range ns {
		out = append(out, engine.Owned{Kind: "network", ID: n.ID, Name: n.Name, Labels: n.Labels, Created: n.Created})
	}
	vs, err := e.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("listing volumes labelled %s: %w", key, err)
	}
	for _, v := range vs.Volumes {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		out = append(out, engine.Owned{Kind: "volume", ID: v.Name, Name: v.Name, Labels: v.Labels, Created: created})
	}
	return out, nil
}

func containerName(c container.Summary) string {
	if len(c.Names) > 0 {
		return strings.TrimPrefix(c.Names[0], "/")
	}
	return c.ID
}

// RemoveByLabel force-removes every container and then every network and
// volume labelled key=value, and checks that nothing under the label is
// left. It
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
	vs, err := e.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("listing volumes: %w", err))
	}
	for _, v := range vs.Volumes {
		if err := e.cli.VolumeRemove(ctx, v.Name, true); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
		}
	}

	if left, err := e.ListByLabel(ctx, key, value); err != nil {
		errs = append(errs, err)
	} else if !left.Empty() {
		errs = append(errs, fmt.Errorf("still present after removal: containers %v, networks %v, volumes %v", left.Containers, left.Networks, left.Volumes))
	}
	if len(errs) > 0 {
		return fmt.Errorf("tearing down everything labelled %s: %w", sel, errors.Join(errs...))
	}
	return nil
}
