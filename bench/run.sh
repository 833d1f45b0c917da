#!/usr/bin/env bash
# Runs every performance benchmark of docs/performance.md, each side by side with
# what it is compared against in the same run, and prints the figures the
# performance table (docs/performance.md) reports. Needs the services (bash .ci/services).
#
#   bash bench/run.sh            all of them (about 6 minutes)
#   bash bench/run.sh plan       one: plan, sampler, verify, window, prefill, ingest, report
set -euo pipefail
cd "$(dirname "$0")/.."
want=${1:-all}
run() { [ "$want" = all ] || [ "$want" = "$1" ]; }
bench() { # package, pattern, extra flags...
  local pkg=$1 pat=$2; shift 2
  # The package comes first: go test would take a package's own flag
  # (-sampler.overhead) standing before it for a build flag.
  go test "$pkg" -run '^$' -bench "$pat" "$@" | grep -E '^Benchmark' || true
}

if run plan; then
  echo "== spatec vet vs cue vet (target: <= 1.00x, < 2 s)"
  bash bench/plan.sh 21
fi
if run sampler; then
  echo "== sampler at 100 ms over 4 containers, 30 s, process CPU time (target: < 1% of a core)"
  bench ./exec/sample SamplerOverhead -benchtime 1x -sampler.overhead=30s
fi
if run verify; then
  echo "== locate + read back + verify one container's caps (target: < 50 ms)"
  bench ./exec/cgroup 'Verify' -benchtime 2000x
fi
if run window; then
  echo "== window resolution: median gap between readings, 100 ms vs 1 s sampler (target: <= 100 ms, 10x finer)"
  bench ./exec/sample WindowResolution -benchtime 1x
fi
if run prefill; then
  echo "== sensor-batch prefill into local-containers' Kafka: 1.5M batches, spatec's peak memory (target: < 256 MiB);"
  echo "   then vs a bare franz-go loop writing the same bytes, alternated (target: >= 0.8x)"
  go run ./bench/prefill
  echo "== json-rows prefill vs a bare franz-go produce loop, embedded broker, alternated (target: >= 0.8x)"
  bench ./exec/broker PrefillVsBare -benchtime 8x
fi
if run ingest; then
  echo "== ingest-ceiling client vs clickhouse-client, same rows, Native (target: >= 0.9x)"
  bench ./exec/chstore IngestVsClickhouseClient -benchtime 3x
fi
if run report; then
  echo "== report over 100k records (target: < 2 s)"
  bench ./runs/report Report100k -benchtime 3x
fi
