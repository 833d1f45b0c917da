package exec

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
