package exec

import (
	"context"
	"errors"
	"strings"
	"testing"

	"spatec.dev/spatec/schema"
)

func TestOneImageReferenceIsBuiltOneWay(t *testing.T) {
	s := &Session{images: map[string]image{
		"spatec-x:1": {ref: "spatec-x:1", id: "sha256:aa", build: &schema.Build{Program: "./cmd/x"}},
	}}
	img, err := s.ensureImage(context.Background(), "spatec-x:1", &schema.Build{Program: "./cmd/x"})
	if err != nil || img.id != "sha256:aa" {
		t.Fatalf("the same build again: %+v, %v; want the image already made", img, err)
	}
	_, err = s.ensureImage(context.Background(), "spatec-x:1", &schema.Build{Program: "./cmd/y"})
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "image spatec-x:1 is declared twice, built two ways (from the program ./cmd/x and from the program ./cmd/y)") {
		t.Fatalf("another build of the same reference: %v; want a refusal naming both", err)
	}
}

func TestServiceRefPinsByDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	for ref, want := range map[string]string{
		"clickhouse/clickhouse-server:24.8":    "clickhouse/clickhouse-server@" + digest,
		"registry.local:5000/redpanda:v24.2.1": "registry.local:5000/redpanda@" + digest,
		"registry.local:5000/redpanda":         "registry.local:5000/redpanda@" + digest,
	} {
		if got := serviceRef(schema.Service{Image: &schema.Image{Ref: ref, Digest: digest}}); got != want {
			t.Errorf("serviceRef(%s) = %s, want %s", ref, got, want)
		}
	}
	if got := serviceRef(schema.Service{Image: &schema.Image{Ref: "spatec-broker:0.1.0"}}); got != "spatec-broker:0.1.0" {
		t.Errorf("an unpinned reference became %s", got)
	}
}
