package engine

import "time"

// HostInfo is what the engine reports about the host it runs on: the facts a
// record carries for provenance (C14) and the checks the executor makes
// before applying caps (cores, swap accounting).
type HostInfo struct {
	// EngineVersion is the engine's own version, e.g. "20.10.24+dfsg1".
	EngineVersion string
	// APIVersion is the newest API version the engine speaks.
	APIVersion string
	// ClientAPIVersion is the API version this client negotiated with it.
	ClientAPIVersion string
	// CgroupDriver is "cgroupfs" or "systemd".
	CgroupDriver string
	// CgroupVersion is "1" or "2".
	CgroupVersion string
	// NCPU is the number of CPUs the engine can hand out.
	NCPU int
	// MemTotal is the host's memory in bytes.
	MemTotal int64
	// KernelVersion is the host kernel's release string.
	KernelVersion string
	// OperatingSystem names the host distribution.
	OperatingSystem string
	// Architecture is the host's architecture as the engine reports it:
	// Docker as the kernel does ("x86_64", "aarch64"), Kubernetes as Go
	// does ("amd64", "arm64"); schema.ArchOf reads either.
	Architecture string
	// SwapLimit tells whether the kernel accounts swap per cgroup, so that a
	// MemorySwap cap is enforced. Without it the host must have no swap (C5).
	SwapLimit bool
	// CPUCFSQuota tells whether the kernel enforces CPU quotas (NanoCPUs).
	CPUCFSQuota bool
	// MemoryLimit tells whether the kernel enforces memory limits.
	MemoryLimit bool
	// Warnings are the engine's own warnings about the host, verbatim.
	Warnings []string
}

// ContainerSpec is one container to create, with exactly the caps it gets.
// Zero values mean "not set", except MemorySwap, which must be set whenever
// Memory is (see Engine.Create).
type ContainerSpec struct {
	// Name is the container's name; unique on the engine.
	Name string
	// Image is the image reference or ID.
	Image string
	// ImageID, when set, is the content ID ("sha256:…") Image resolved to
	// when the run made sure of it. The engine creates the container from
	// it, so a tag moved since (a rebuild, another process) cannot change
	// what runs; Image stays the name the container is known by.
	ImageID string
	// Entrypoint replaces the image's entrypoint when non-empty.
	Entrypoint []string
	// Args are the arguments (Docker's Cmd).
	Args []string
	// Env is the environment; it is passed sorted by key.
	Env map[string]string
	// Labels mark the container; teardown finds containers by label.
	Labels map[string]string

	// NanoCPUs is the CPU cap in billionths of a CPU (0.5 CPU = 5e8).
	NanoCPUs int64
	// CpusetCpus pins the container to these CPUs ("0-3", "1,3").
	CpusetCpus string
	// Memory is the memory cap in bytes.
	Memory int64
	// MemorySwap is memory plus swap in bytes; equal to Memory means no
	// swap (C5), -1 means unlimited swap.
	MemorySwap int64
	// ShmSize is the size of /dev/shm in bytes (the engine's default is
	// 64 MiB).
	ShmSize int64
	// NoFile is the open-file limit, soft and hard; 0 keeps the engine's.
	NoFile int64
	// Tmpfs mounts tmpfs file systems: path to mount options ("size=64m").
	Tmpfs map[string]string
	// Binds are bind mounts in Docker's "host:container[:ro]" form.
	Binds []string
	// Volumes mount named volumes, by path in the container: the engine
	// makes a volume, with the container's labels, the first time it is
	// named, so containers that name the same volume share it, and
	// RemoveByLabel removes it with them.
	Volumes map[string]string

	// NetworkMode is "host", the name of a network to join, or
	// "container:<id>": another container's network namespace, shared.
	NetworkMode string
	// CapAdd are kernel capabilities given to the container beyond the
	// engine's default set ("NET_ADMIN").
	CapAdd []string
	// NetworkAliases are extra DNS names on that network (not with "host").
	NetworkAliases []string
	// Restart is the engine's restart policy for the container ("no",
	// "on-failure", "always"); "" is the engine's default, never.
	Restart string
	// Replaced runs the container under a controller that makes it again
	// when it is deleted (a ReplicaSet on Kubernetes), for a failure
	// scenario that deletes it (Replacer); its id then names the
	// controller, and Inspect, Wait and Logs read its current instance.
	Replaced bool
	// Hosts maps host names to addresses in the container's /etc/hosts.
	Hosts map[string]string
	// Publish maps container ports ("8081/tcp") to host ports ("18081").
	Publish map[string]string
	// Files are written into the container, by absolute path, after it is
	// created and before it starts (configuration files).
	Files map[string]string
	// OpenDirs are directories made in the container before it starts,
	// writable by every user (mode 1777, like /tmp), by absolute path.
	OpenDirs []string
	// Health, when set, is a health check the engine runs in the
	// container; Container.Health reports its state.
	Health *HealthCheck
}

// HealthCheck is a command the engine runs inside a container, repeatedly;
// exit status 0 means healthy.
type HealthCheck struct {
	Command  []string
	Interval time.Duration
	Timeout  time.Duration
}

// Created is the outcome of creating a container.
type Created struct {
	// ID is the container's ID.
	ID string
	// Warnings are the engine's create warnings, verbatim. Each one means a
	// requested setting was dropped or changed; the executor treats any of
	// them as a cap mismatch (C6).
	Warnings []string
}

// Resources are a container's caps as the engine recorded them.
type Resources struct {
	NanoCPUs   int64
	CPUQuota   int64
	CPUPeriod  int64
	CpusetCpus string
	Memory     int64
	MemorySwap int64
	ShmSize    int64
}

// Container is a container's state as the engine reports it.
type Container struct {
	ID   string
	Name string
	// Image is the reference the container was created from.
	Image string
	// ImageID is the ID ("sha256:…") of the image it runs.
	ImageID string
	Labels  map[string]string
	// Status is the engine's state word: created, running, exited, dead…
	Status string
	// Running is true while the container's process runs.
	Running bool
	// Pid is the main process's PID in the host's PID namespace (0 when not
	// running); /proc/<Pid>/cgroup locates its cgroup.
	Pid int
	// ExitCode is the exit code once the container has stopped.
	ExitCode int
	// OOMKilled tells whether the kernel's OOM killer ended it.
	OOMKilled bool
	// Error is the engine's error for the container, if any (e.g. a start
	// failure).
	Error string
	// StartedAt is when its process last started: after a restart, the
	// new process's start.
	StartedAt  time.Time
	FinishedAt time.Time
	// Restarts counts the times its restart policy has started it again,
	// or its controller made it again (ContainerSpec.Replaced).
	Restarts int
	// Resources are the caps as applied.
	Resources   Resources
	NetworkMode string
	// Addresses are the container's IP addresses, by network name.
	Addresses map[string]string
	// Health is the state of its health check ("starting", "healthy",
	// "unhealthy"), "" without one.
	Health string
	// HealthOutput is what the last health check printed, when it failed.
	HealthOutput string
	// Pod, for a container a kubelet runs, says where it is: the node
	// reads its cgroup by these, not by a PID on spatec's host.
	Pod *PodRef
}

// PodRef locates a pod's container on its node.
type PodRef struct {
	// Name is the pod's name, and Node its node's.
	Name, Node string
	// UID is the pod's uid; QoS its QoS class (Guaranteed, Burstable,
	// BestEffort), which places it in the kubelet's tree.
	UID, QoS string
	// ContainerID is the runtime's id of the container, without the
	// runtime's scheme ("containerd://").
	ContainerID string
}

// Image identifies an image for records (C14, C16).
type Image struct {
	// ID is the image's content ID, "sha256:…".
	ID string
	// RepoDigests are the registry digests the engine knows ("name@sha256:…");
	// empty for images built or loaded locally.
	RepoDigests []string
	// Labels are the image's labels.
	Labels map[string]string
	// Architecture is the architecture the image's config declares
	// ("amd64", "arm64"); "" where the engine does not say.
	Architecture string
}

// ScratchImage describes an image built FROM scratch out of files alone: a
// static binary and whatever it needs.
type ScratchImage struct {
	// Tag names the image ("spatec-burn:test").
	Tag string
	// Files maps a path inside the image ("burn", "etc/app.conf") to its
	// content. Every file is written with mode 0755, so binaries run.
	Files map[string][]byte
	// Entrypoint is the image's entrypoint; its first element must be one of
	// Files, as an absolute path ("/burn"), since scratch has no shell.
	Entrypoint []string
	// Labels are image labels.
	Labels map[string]string
	// Arch is the architecture the image is declared for ("amd64",
	// "arm64"), which its files must be built for; "" is the engine's own.
	Arch string
}

// Labelled lists what the engine holds under a label.
type Labelled struct {
	// Containers are container names (IDs where a container has no name).
	Containers []string
	// Networks are network names.
	Networks []string
	// Volumes are volume names.
	Volumes []string
}

// Empty reports whether nothing is left under the label.
func (l Labelled) Empty() bool {
	return len(l.Containers) == 0 && len(l.Networks) == 0 && len(l.Volumes) == 0
}

// Owned is a container, network or volume found by its label.
type Owned struct {
	// Kind is "container", "network" or "volume".
	Kind   string
	ID     string
	Name   string
	Labels map[string]string
	// Created is when the engine created it.
	Created time.Time
}
