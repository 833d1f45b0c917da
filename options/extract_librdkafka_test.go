package options

import (
	"context"
	"strings"
	"testing"
	"time"

	"spatec.dev/spatec/internal/chdb"
	"spatec.dev/spatec/internal/testenv"
)

// TestRegistryLibrdkafkaIsTheSystems regenerates librdkafka's registry
// from the library the pinned confluent-kafka wheel bundles (installed in
// internal/chdb's cached environment) and compares it with the committed
// file.
func TestRegistryLibrdkafkaIsTheSystems(t *testing.T) {
	testenv.Require(t, "chDB's Python environment, with confluent-kafka (python3 with venv and pip; PyPI the first time)", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		_, err := chdb.Prepare(ctx, "")
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := ExtractLibrdkafka(ctx, rootOfRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("extracted in %v", time.Since(start).Round(time.Millisecond))
	compareCommitted(t, got, *update, "go test ./options -run TestRegistryLibrdkafka -update")
}

// TestLibrdkafkaTableParses reads rows of librdkafka's own table as it
// prints them, one of each kind the extractor maps.
func TestLibrdkafkaTableParses(t *testing.T) {
	table := "librdkafka 9.9.9\n## Global configuration properties\n\n" +
		"Property | C/P | Range | Default | Importance | Description\n" +
		"-----|-----|----|---:|---|---\n" +
		"metadata.broker.list | * | | | high | Initial list of brokers. More. <br>*Type: string*\n" +
		"bootstrap.servers | * | | | high | Alias for `metadata.broker.list`: Initial list. <br>*Type: string*\n" +
		"sasl.kerberos.kinit.cmd | * | | kinit -R || kinit | low | Shell command. <br>*Type: string*\n" +
		"fetch.wait.max.ms | C | 0 .. 300000 | 500 | low | Maximum time. <br>*Type: integer*\n" +
		"old.thing | * | 0 .. 1 | 0 | low | **DEPRECATED** No longer used. <br>*Type: integer*\n" +
		"compression.codec | P | none, gzip | none | medium | Codec. <br>*Type: enum value*\n" +
		"\n## Topic configuration properties\n\n" +
		"compression.codec | P | none, gzip, inherit | inherit | high | Codec. <br>*Type: enum value*\n" +
		"opaque | * | | | low | Application opaque. <br>*Type: see dedicated API*\n"
	reg, err := parseLibrdkafkaTable([]byte(table))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		`"version": "9.9.9"`,
		`"key": "bootstrap.servers",
      "type": "string",
      "use": "metadata.broker.list"`,
		`"fallback": [
        "bootstrap.servers"
      ]`,
		`"default": "kinit -R || kinit"`,
		`"min": 0,
      "max": 300000,
      "default": "500"`,
		`"deprecated": true`,
		`"doc": "[global and topic, producer] Codec."`,
		`"doc": "[topic, consumer and producer] Application opaque."`,
		`"type": "any"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("registry lacks %s:\n%s", want, got)
		}
	}
	if strings.Count(got, `"key": "compression.codec"`) != 1 {
		t.Errorf("compression.codec is not one option:\n%s", got)
	}
}
