#!/usr/bin/env bash
# Times spatec over every plan of the tree (every variant of every entrant
# against every environment it supports) side by side with the
# official `cue vet -c ./...` over the same tree (each entrant package
# resolving its own plans), and prints the mean wall time of
# each and the ratios:
#   spatec vet                          checks every plan;
#   spatec plan --env all -o json       also decodes, digests and prints them.
# With perf, it also prints each command's page faults (last round): in a VM
# each costs ~12 us, so they are a large share of all three.
# Uses `perf stat -r` when perf is installed (Debian's linux-perf), three
# rounds alternating the commands, else a median of interleaved runs.
#
#   bash bench/plan.sh [runs]      (default 41 runs of each, per round)
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
cmds=("$bin/spatec vet" "$bin/spatec plan --env all -o json" "$cue vet -c ./...")
names=("spatec vet" "spatec plan --env all" "cue vet ./...")
# Warm the page cache for all, and check all pass.
for c in "${cmds[@]}"; do $c >/dev/null; done

t=(0 0 0) f=("" "" "")
# each round's figure and ratio, for the spread over the rounds
lo=(1e18 1e18 1e18) hi=(0 0 0) rlo=(1e9 1e9) rhi=(0 0)
if perf stat -e task-clock true >/dev/null 2>&1; then
  how="perf stat -r $runs x 3 rounds, mean"
  # prints "<elapsed us> <page faults>"
  measure() {
    perf stat -r "$runs" -e page-faults "$@" 2>&1 >/dev/null |
      awk '/page-faults/ {gsub(",", "", $1); pf = $1} /seconds time elapsed/ {print $1 * 1e6, pf}'
  }
  for round in 1 2 3; do # alternate, so no command always runs on a warmer machine
    r=(0 0 0)
    for i in 0 1 2; do
      # shellcheck disable=SC2086
      read -r us pf < <(measure ${cmds[$i]})
      t[$i]=$(awk -v a="${t[$i]}" -v b="$us" 'BEGIN {print a + b / 3}')
      f[$i]=$pf
      r[$i]=$us
      lo[$i]=$(awk -v a="${lo[$i]}" -v b="$us" 'BEGIN {print (b < a) ? b : a}')
      hi[$i]=$(awk -v a="${hi[$i]}" -v b="$us" 'BEGIN {print (b > a) ? b : a}')
    done
    for i in 0 1; do
      q=$(awk -v a="${r[$i]}" -v c="${r[2]}" 'BEGIN {print a / c}')
      rlo[$i]=$(awk -v a="${rlo[$i]}" -v b="$q" 'BEGIN {print (b < a) ? b : a}')
      rhi[$i]=$(awk -v a="${rhi[$i]}" -v b="$q" 'BEGIN {print (b > a) ? b : a}')
    done
  done
else
  how="median of $runs interleaved runs"
  now() { date +%s%N; }
  samples=("" "" "")
  for _ in $(seq "$runs"); do
    for i in 0 1 2; do
      t0=$(now); ${cmds[$i]} >/dev/null; t1=$(now)
      samples[$i]+="$(( (t1 - t0) / 1000 )) "
    done
  done
  median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  for i in 0 1 2; do t[$i]=$(median "${samples[$i]}"); done
fi
plans=$("$bin/spatec" vet | awk '/plans,/ {print $1}')
echo "all $plans plans of the tree, wall time ($how)"
for i in 0 1 2; do
  awk -v n="${names[$i]}" -v s="${t[$i]}" -v c="${t[2]}" -v pf="${f[$i]}" -v lo="${lo[$i]}" -v hi="${hi[$i]}" \
    -v rlo="${rlo[$i]:-}" -v rhi="${rhi[$i]:-}" 'BEGIN {
    printf "%-22s %7.1f ms", n, s / 1000
    if (hi > 0) printf " [%.1f-%.1f]", lo / 1000, hi / 1000
    printf "   %5s", (n != "cue vet ./...") ? sprintf("%.2fx", s / c) : "1.00x"
    if (rhi != "" && n != "cue vet ./...") printf " [%.2f-%.2f]", rlo, rhi
    if (pf != "") printf "   %5d page faults", pf
    printf "\n"
  }'
done
echo "targets: <= 1.00x cue vet, and under 2000 ms"
