#!/usr/bin/env bash
# Times `spatec vet` (resolves every variant of every entrant against every
# environment it supports: all 13 plans) side by side with the official
# `cue vet -c .` over the same tree, and prints the mean wall time of each
# and their ratio. Uses `perf stat -r` when perf is installed (Debian's
# linux-perf), else an interleaved loop with the median.
#
#   bash bench/plan.sh [runs]      (default 41 runs of each)
#
# Targets: spatec at most 1.0x cue vet, and under 2 s.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-41}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/spatec" ./cmd/spatec
cue=$(command -v cue || echo "$(go env GOPATH)/bin/cue")
[ -x "$cue" ] || GOFLAGS= go install cuelang.org/go/cmd/cue@v0.17.1
# Warm the page cache for both, and check both pass.
"$bin/spatec" vet >/dev/null
"$cue" vet -c .

if perf stat -e task-clock true >/dev/null 2>&1; then
  elapsed() { perf stat -r "$runs" -e task-clock "$@" 2>&1 >/dev/null | awk '/seconds time elapsed/ {print $1 * 1e6}'; }
  how="perf stat -r $runs, mean"
  s=0 c=0
  for round in 1 2 3; do # alternate, so neither always runs on a warmer machine
    s=$(awk -v a="$s" -v b="$(elapsed "$bin/spatec" vet)" 'BEGIN {print a + b / 3}')
    c=$(awk -v a="$c" -v b="$(elapsed "$cue" vet -c .)" 'BEGIN {print a + b / 3}')
  done
else
  how="median of $runs interleaved runs"
  now() { date +%s%N; }
  sv=() cv=()
  for _ in $(seq "$runs"); do
    t0=$(now); "$bin/spatec" vet >/dev/null; t1=$(now)
    "$cue" vet -c .; t2=$(now)
    sv+=($(( (t1 - t0) / 1000 ))) cv+=($(( (t2 - t1) / 1000 )))
  done
  median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  s=$(median "${sv[@]}") c=$(median "${cv[@]}")
fi
awk -v s="$s" -v c="$c" -v how="$how" 'BEGIN {
  printf "all 13 plans of the tree, wall time (%s)\n", how
  printf "spatec vet   %7.1f ms\n", s / 1000
  printf "cue vet -c . %7.1f ms\n", c / 1000
  printf "ratio        %7.2fx  (target <= 1.00x, and spatec < 2000 ms)\n", s / c
}'
