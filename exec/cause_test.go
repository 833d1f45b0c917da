package exec

import (
	"strings"
	"testing"
)

// TestLastErrorIsTheInnermostCause: of a JVM's stack trace followed by
// its recovery, the note quotes the innermost cause; of a Go arm, its
// last error line; of a log without one, nothing.
func TestLastErrorIsTheInnermostCause(t *testing.T) {
	for _, tc := range []struct{ log, want string }{
		{`13:34:40,001 WARN  Task - Source: sensor-batches (1/1)#7 switched from RUNNING to FAILED with failure cause:
java.io.IOException: Failed to deserialize consumer record due to
	at org.apache.flink.connector.kafka.source.reader.KafkaRecordEmitter.emitRecord(KafkaRecordEmitter.java:56)
Caused by: java.io.IOException: Could not find schema with id 99999 in registry
	at org.apache.flink.formats.avro.registry.confluent.ConfluentSchemaRegistryCoder.readSchema(ConfluentSchemaRegistryCoder.java:77)
Caused by: io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: No content with id/hash 'contentId-99999' was found; error code: 40403
	at io.confluent.kafka.schemaregistry.client.rest.RestService.sendHttpRequest(RestService.java:314)
13:34:43,169 INFO  TaskExecutor - Un-registering task and sending final execution state FAILED to JobManager`,
			"Caused by: io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException: No content with id/hash 'contentId-99999' was found; error code: 40403"},
		{"2026/12/05 13:00:01 worker 0: insert of 20000 rows failed, retrying in 100ms: dial tcp: connection refused\n2026/12/05 13:00:02 ERROR worker 0: giving up", "2026/12/05 13:00:02 ERROR worker 0: giving up"},
		{"13:00:00 INFO started\n13:00:01 INFO running", ""},
	} {
		if got := lastError(strings.Split(tc.log, "\n")); got != tc.want {
			t.Errorf("lastError = %q; want %q", got, tc.want)
		}
	}
}
