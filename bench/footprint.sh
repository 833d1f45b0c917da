#!/usr/bin/env bash
# The minimum-footprint studies at this machine's scale (environment
# local-containers): the memory study of spatec's reference consumer, of
# Flink and of ClickHouse's Kafka engine (on json-rows), each the arm's
# data-plane memory stepped down from the envelope until it degrades, then
# bisected. Prints each study's verdict, then the report's footprint
# tables, and writes the HTML report.
#
#   bash bench/footprint.sh                     every study, each its declared reps
#   REPS=2 STUDIES="reference:memory" bash bench/footprint.sh
#
# It installs and starts what it needs (bash .ci/services), builds spatec,
# and measures the infrastructure's ceilings first, as bench/compare.sh
# does. Every step shows its progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
results=${RESULTS:-results-footprint}
report=${REPORT:-footprint.html}
studies=${STUDIES:-reference:memory flink:memory clickhouse-kafka-engine:memory}
reps=()
if [ -n "${REPS:-}" ]; then reps=(--reps "$REPS"); fi

bash .ci/services
bin=$(mktemp -d)/spatec
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/spatec

began=$(date +%s)
"$bin" ceiling --measure --env local-containers --results "$results"
for study in $studies; do
  from=$(date +%s)
  "$bin" footprint --env local-containers "$study" "${reps[@]}" --results "$results"
  echo "$study: $(( $(date +%s) - from )) s"
done
"$bin" report "$results/local-containers" --format html -o "$report"
"$bin" report "$results/local-containers"
echo "footprint studies: $(( $(date +%s) - began )) s; report in $report"
