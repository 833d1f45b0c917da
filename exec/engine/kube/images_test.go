package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"spatec.dev/spatec/exec/engine"
	"spatec.dev/spatec/schema"
)

// nodeWith is a node whose status lists images, each by its names.
func nodeWith(name string, images ...[]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, names := range images {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: names})
	}
	return n
}

// TestImagesOnEveryNodeTheRunUses: with the arm on one node and ClickHouse
// on another, an image the nodes pulled is there only when both hold it,
// and is recorded only when both hold it by one digest.
func TestImagesOnEveryNodeTheRunUses(t *testing.T) {
	ctx := context.Background()
	const (
		ch  = "docker.io/clickhouse/clickhouse-server:25.8"
		one = "sha256:" + "1111111111111111111111111111111111111111111111111111111111111111"
		two = "sha256:" + "2222222222222222222222222222222222222222222222222222222222222222"
	)
	on := func(digest string) []string {
		return []string{"docker.io/clickhouse/clickhouse-server@" + digest, ch}
	}
	engineOver := func(nodes ...*corev1.Node) *Engine {
		client := fake.NewClientset(nodes[0], nodes[1])
		return &Engine{Client: client, Namespace: "spatec", Place: schema.Placement{Node: "node-a"},
			Services: map[string]schema.Placement{"clickhouse": {Node: "node-b"}}}
	}

	both := engineOver(nodeWith("node-a", on(one)), nodeWith("node-b", on(one)))
	if ok, err := both.ImageExists(ctx, "clickhouse/clickhouse-server:25.8"); !ok || err != nil {
		t.Errorf("an image on both nodes: exists %v, %v", ok, err)
	}
	if img, err := both.ImageDigest(ctx, ch); err != nil || img.ID != one {
		t.Errorf("an image on both nodes: %+v, %v; want %s", img, err, one)
	}

	lacking := engineOver(nodeWith("node-a", on(one)), nodeWith("node-b"))
	if ok, err := lacking.ImageExists(ctx, ch); ok || err != nil {
		t.Errorf("an image node-b lacks: exists %v, %v; want false", ok, err)
	}
	var missing *engine.ImageMissingError
	if _, err := lacking.ImageDigest(ctx, ch); !errors.As(err, &missing) {
		t.Errorf("an image node-b lacks: %v; want it missing", err)
	}
	if err := lacking.Pull(ctx, ch, nil); err == nil || !strings.Contains(err.Error(), "onto the run's nodes (node-a, node-b) first") {
		t.Errorf("a pull: %v; want a refusal naming both nodes", err)
	}

	differ := engineOver(nodeWith("node-a", on(one)), nodeWith("node-b", on(two)))
	if _, err := differ.ImageDigest(ctx, ch); err == nil || !strings.Contains(err.Error(), "is "+one+" on node node-a and "+two+" on node node-b") {
		t.Errorf("two digests: %v; want a refusal naming both", err)
	}

	byName := engineOver(nodeWith("node-a", on(one)), nodeWith("node-b", []string{ch}))
	if _, err := byName.ImageDigest(ctx, ch); err == nil || !strings.Contains(err.Error(), "is on node node-b by name only") {
		t.Errorf("no digest on node-b: %v", err)
	}
}
