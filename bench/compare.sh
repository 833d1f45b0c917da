#!/usr/bin/env bash
# The main job, at this machine's scale: from a fresh Debian machine to a
# comparison of two real arms, ClickHouse's Kafka engine and spatec's
# reference consumer, on identical infrastructure in containers
# (environment local-containers).
#
#   bash bench/compare.sh               3 repetitions, results/ and report.html
#   REPS=5 RESULTS=/tmp/r bash bench/compare.sh
#
# It installs and starts what it needs (bash .ci/services: the Docker engine,
# mmdebstrap), builds spatec, measures the infrastructure's ceilings from
# inside the run's network, runs both arms interleaved (building their images
# on the first run: Debian's ClickHouse from packages, the broker and the
# reference arm from this checkout), and writes the report as a table and as
# report.html. Every step shows its progress on stderr.
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
"$bin" exec --env local-containers clickhouse-kafka-engine reference --reps "$reps" --results "$results" || status=$?
"$bin" report "$results/local-containers" --format html -o "$report"
"$bin" report "$results/local-containers"
echo "report: $report" >&2
exit "$status"
