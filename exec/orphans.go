package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"spatec.dev/spatec/runs/record"
)

// Orphan is what one run left on the engine: its containers and networks.
type Orphan struct {
	// Run is the run's or session's id (the LabelRun value).
	Run string
	// Process is the spatec process that created it ("pid/start"), "" when
	// the objects do not say.
	Process    string
	Containers []string
	Networks   []string
	Volumes    []string
	// Since is when the oldest of them was created.
	Since time.Time
}

func (o Orphan) String() string {
	var parts []string
	if len(o.Containers) > 0 {
		parts = append(parts, "containers "+strings.Join(o.Containers, ", "))
	}
	if len(o.Networks) > 0 {
		parts = append(parts, "networks "+strings.Join(o.Networks, ", "))
	}
	if len(o.Volumes) > 0 {
		parts = append(parts, "volumes "+strings.Join(o.Volumes, ", "))
	}
	return strings.Join(parts, "; ")
}

// sweep finds what spatec runs left on the engine. The objects of a run
// whose process is gone (killed, or its machine rebooted) are orphans: they
// are removed and returned, so the caller can say what went. A run whose
// process still runs is measuring: sweep refuses rather than measure beside
// it. What this process itself created is left alone.
func (r *Runner) sweep(ctx context.Context) ([]Orphan, error) {
	objs, err := r.Engine.ListOwned(ctx, LabelRun)
	if err != nil {
		return nil, fmt.Errorf("looking for what earlier runs left: %w", err)
	}
	self, err := processID(os.Getpid())
	if err != nil {
		return nil, err
	}
	byRun := map[string]*Orphan{}
	for _, o := range objs {
		id := o.Labels[LabelRun]
		or := byRun[id]
		if or == nil {
			or = &Orphan{Run: id, Process: o.Labels[LabelProcess], Since: o.Created}
			byRun[id] = or
		}
		if o.Created.Before(or.Since) {
			or.Since = o.Created
		}
		switch o.Kind {
		case "network":
			or.Networks = append(or.Networks, o.Name)
		case "volume":
			or.Volumes = append(or.Volumes, o.Name)
		default:
			or.Containers = append(or.Containers, o.Name)
		}
	}
	var live []string
	var orphans []Orphan
	for _, id := range slices.Sorted(maps.Keys(byRun)) {
		o := byRun[id]
		if o.Process == self {
			continue // another session of this process
		}
		if o.Process != "" && processAlive(o.Process) {
			live = append(live, fmt.Sprintf("%s, by spatec process %s", o, o.Process))
			continue
		}
		orphans = append(orphans, *o)
	}
	if len(live) > 0 {
		return nil, refusef("another spatec is measuring on this engine; a run beside it would share its cores and its infrastructure:\n  %s\nwait for it to end, or stop it", strings.Join(live, "\n  "))
	}
	// A session's network goes last: the runs' containers on it hold it.
	slices.SortStableFunc(orphans, func(a, b Orphan) int { return len(a.Networks) - len(b.Networks) })
	var errs []error
	for _, o := range orphans {
		if err := r.Engine.RemoveByLabel(ctx, LabelRun, o.Run); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return orphans, fmt.Errorf("removing what earlier runs left: %w", errors.Join(errs...))
	}
	return orphans, nil
}

// SelfProcess is this process's LabelProcess value: what spatec puts on
// objects it creates outside a session (a node's probe), so that the orphan
// sweep leaves them to it.
func SelfProcess() (string, error) { return processID(os.Getpid()) }

// processID names a process by its pid and its start time (clock ticks
// since boot, from /proc/<pid>/stat): together they name it even once the
// pid is reused.
func processID(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", fmt.Errorf("reading the identity of process %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis. starttime is field 22 of the line,
	// the 20th after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || len(strings.Fields(string(b[i+1:]))) < 20 {
		return "", fmt.Errorf("reading the identity of process %d: /proc/%d/stat is not as expected", pid, pid)
	}
	return strconv.Itoa(pid) + "/" + strings.Fields(string(b[i+1:]))[19], nil
}

// processAlive reports whether the process id names still runs.
func processAlive(id string) bool {
	pid, _, ok := strings.Cut(id, "/")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil {
		return false
	}
	now, err := processID(n)
	return err == nil && now == id
}

// killedNote is the note of a run whose spatec process died before it
// could record the run.
const killedNote = "spatec ended without recording this run: its process was killed (SIGKILL, the OOM killer) or the host went down during it; the run was recorded, and what it left removed, by the next spatec run under the same results"

// recoverPending records as failed every run written ahead under root whose
// process is gone, and returns them.
func (r *Runner) recoverPending(root string) ([]record.Record, error) {
	pending, err := record.ListPending(root)
	if err != nil {
		return nil, err
	}
	var recovered []record.Record
	var errs []error
	for _, p := range pending {
		if processAlive(p.Process) {
			continue
		}
		rec := p.Record
		rec.Run.EndedAt = r.now().UTC()
		path := record.PathFor(root, rec.Run.Env, rec.SUT.Entrant, rec.Run.StartedAt)
		if err := record.Append(path, &rec); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := record.RemovePending(root, rec.RunID); err != nil {
			errs = append(errs, err)
		}
		recovered = append(recovered, rec)
	}
	return recovered, errors.Join(errs...)
}
