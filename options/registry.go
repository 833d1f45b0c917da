// Package options holds each system's option registry: every option the
// system itself reads (its key, type, default, the keys it still reads in
// its place), generated from the system's own code by one extractor per
// system (Extract<System>), committed as JSON (options/<system>/*.json)
// and rendered as CUE (options/<system>/registry.cue, by CUE), so that an
// entrant's configuration is closed over what the system reads and an
// unknown or misspelt key is refused while the author writes it.
//
// `go test ./options -run TestRegistry -update` runs every extractor and
// writes both; docs/options.md says where each system's comes from.
package options

// Registry is one system's options at one version, as its own code
// declares them.
type Registry struct {
	// System names the system as its documentation does ("Flink").
	System string `json:"system"`
	// Version is the exact version read ("2.2.1").
	Version string `json:"version"`
	// Source says what was read: the artefact and its digest or commit,
	// and how ("every ConfigOption field of the classes in
	// flink-dist-2.2.1.jar, by reflection").
	Source string `json:"source"`
	// Options are the system's options, sorted by key.
	Options []Option `json:"options"`
}

// Option is one option of a system.
type Option struct {
	// Key is the option's name as an author writes it in the system's
	// configuration ("execution.checkpointing.interval"; a nested
	// option's name within its parent: "max_events").
	Key string `json:"key"`
	// Type is one of the types below, in the system's own syntax.
	Type Type `json:"type"`
	// Values lists an enum's values, as the system spells them.
	Values []string `json:"values,omitempty"`
	// Min and Max bound a number, where the system's code bounds it.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Default is the system's default, as text; absent when it has none.
	Default *string `json:"default,omitempty"`
	// Deprecated is set when the system still reads the key but
	// documents it as deprecated; Use then names the key to write.
	Deprecated bool   `json:"deprecated,omitempty"`
	Use        string `json:"use,omitempty"`
	// Fallback lists the other keys the system reads for this option
	// (Flink's deprecated and fallback keys): each is an option too, and
	// anything the contract owns about this key it owns about them.
	Fallback []string `json:"fallback,omitempty"`
	// Fields are a struct option's own options (Vector's nested blocks).
	Fields []Option `json:"fields,omitempty"`
	// Required is set for an option the system refuses to start without.
	Required bool `json:"required,omitempty"`
	// Doc is the first sentence of the system's own description.
	Doc string `json:"doc,omitempty"`
}

// Type is an option's type, as the system parses its value.
type Type string

// The types a registry uses. Each system's package (options/<system>/
// types.cue) says what text each one accepts in that system's syntax.
const (
	Bool     Type = "bool"
	Int      Type = "int"      // a whole number (Java's int, long, short)
	Float    Type = "float"    // Java's double or float
	String   Type = "string"   // any text
	Enum     Type = "enum"     // one of Values
	Duration Type = "duration" // a span of time in the system's syntax
	Size     Type = "size"     // a memory size in the system's syntax
	List     Type = "list"     // a list in the system's syntax
	Map      Type = "map"      // key:value pairs in the system's syntax
	Class    Type = "class"    // a Java class name
	Password Type = "password" // text the system keeps out of its logs
	Struct   Type = "struct"   // a nested block of Fields
	Any      Type = "any"      // the system accepts anything there
)
