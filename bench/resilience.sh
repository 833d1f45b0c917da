#!/usr/bin/env bash
# The failure scenarios at this machine's scale (environment
# local-containers): every scenario the environment declares, for spatec's
# reference consumer and for Flink, each after REPS undisturbed runs of the
# same arm (the rate every scenario's run is set against). Prints each
# run's verdict as it ends, then the report's scenario tables, and writes
# the HTML report with each scenario's chart.
#
#   bash bench/resilience.sh                    every scenario, reference and Flink
#   ARMS="reference" SCENARIOS="clickhouse-restart" bash bench/resilience.sh
#
# It installs and starts what it needs (bash .ci/services), builds spatec,
# and measures the infrastructure's ceilings first, as bench/compare.sh
# does. Every step shows its progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
results=${RESULTS:-results-resilience}
report=${REPORT:-resilience.html}
arms=${ARMS:-reference flink}
scenarios=${SCENARIOS:-clickhouse-restart clickhouse-pause clickhouse-partition broker-restart data-plane-kill}
reps=${REPS:-3}

bash .ci/services
bin=$(mktemp -d)/spatec
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/spatec

began=$(date +%s)
"$bin" ceiling --measure --env local-containers --results "$results"
for arm in $arms; do
  from=$(date +%s)
  "$bin" exec --env local-containers "$arm" --reps "$reps" --results "$results" || true
  for sc in $scenarios; do
    # A scenario's run that ends failed (rows lost, no recovery) is a
    # finding, not a reason to stop.
    "$bin" exec --env local-containers "$arm" --scenario "$sc" --results "$results" || true
  done
  echo "$arm: $(( $(date +%s) - from )) s"
done
"$bin" report "$results/local-containers" --format html -o "$report"
"$bin" report "$results/local-containers"
echo "failure scenarios: $(( $(date +%s) - began )) s; report in $report"
