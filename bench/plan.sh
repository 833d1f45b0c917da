#!/usr/bin/env bash
# Times `spatec vet` (every entrant, every variant, against every environment
# it supports) side by side with the official `cue vet -c .` over the same
# tree, interleaved, and prints the median wall time of each and their ratio.
#
#   bash bench/plan.sh [runs]      (default 21 runs of each)
#
# Targets: spatec at most 1.0x cue vet, and under 2 s.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/spatec" ./cmd/spatec
cue=$(command -v cue || echo "$(go env GOPATH)/bin/cue")
[ -x "$cue" ] || GOFLAGS= go install cuelang.org/go/cmd/cue@v0.17.1
"$bin/spatec" vet >/dev/null
"$cue" vet -c .

now() { date +%s%N; }
s=() c=()
for _ in $(seq "$runs"); do
  t0=$(now); "$bin/spatec" vet >/dev/null; t1=$(now)
  "$cue" vet -c .; t2=$(now)
  s+=($(( (t1 - t0) / 1000 ))) c+=($(( (t2 - t1) / 1000 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms=$(median "${s[@]}") mc=$(median "${c[@]}")
awk -v s="$ms" -v c="$mc" -v n="$runs" 'BEGIN {
  printf "plans over the whole tree, median of %d interleaved runs\n", n
  printf "spatec vet   %7.1f ms\n", s / 1000
  printf "cue vet -c . %7.1f ms\n", c / 1000
  printf "ratio        %7.2fx  (target <= 1.00x, and spatec < 2000 ms)\n", s / c
}'
