#!/usr/bin/env bash
# The main job, at this machine's scale: from a fresh Debian machine to
# real arms measured on identical infrastructure in containers (environment
# local-containers: Apache Kafka, Debian's ClickHouse 18.16, Apicurio
# Registry): on the benchmark's sensor-batch workload, gated by its
# checksum, Flink (its job built from this tree), spate (its arm built from
# this tree; it fails on 18.16, in the server's own words) and spatec's
# reference consumer; and ClickHouse's Kafka engine (18.16 has no Avro
# format) beside the reference consumer on json-rows, compared.
#
#   bash bench/compare.sh               3 repetitions, results/ and report.html
#   REPS=5 RESULTS=/tmp/r bash bench/compare.sh
#
# It installs and starts what it needs (bash .ci/services: the Docker engine,
# mmdebstrap), builds spatec, measures the infrastructure's ceilings from
# inside the run's network, runs the arms interleaved (building their images
# on the first run: ClickHouse, Kafka and the registry from Debian packages
# and Maven Central's artefacts, Flink from PyPI's distribution and its job
# with Maven, spate's arm with cargo, the reference arm from this
# checkout), and
# writes the report as a table and as report.html. Every step shows its
# progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
results=${RESULTS:-results}
report=${REPORT:-report.html}

bash .ci/services
bin=$(mktemp -d)/spatec
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/spatec

"$bin" ceiling --measure --env local-containers --results "$results"
# A run that is not ok (failed, or infra_bound) exits non-zero; its record
# is kept and the report shows it, so the report is written either way.
status=0
"$bin" exec --env local-containers reference flink spate clickhouse-kafka-engine reference:json-rows --reps "$reps" --results "$results" || status=$?
"$bin" report "$results/local-containers" --format html -o "$report"
"$bin" report "$results/local-containers"
echo "report: $report" >&2
exit "$status"
