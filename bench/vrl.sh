#!/usr/bin/env bash
# The cost of spatec's Vector remap program beside the public harness's, on
# the same corpus with the same VRL runtime (the VRL Vector 0.57.0 runs,
# through the checker in entrants/vector/vrl): each program compiled, held
# to the closed form, then run over the sensor-batch corpus in rounds, the
# two taking turns pass by pass. Prints each program's cost a message (the
# CPU time of the thread running it: median, min–max and p10–p90 over the
# rounds) and the ratio of spatec's to the harness's; exits non-zero if
# that ratio exceeds MAX_RATIO (default 1.1).
#
#   SPATEC_HARNESS=/path/to/harness-checkout bash bench/vrl.sh
#   ROUNDS=25 PASSES=200 SPATEC_HARNESS=... bash bench/vrl.sh
#   SPATEC_VRL_PROGRAM=old.vrl SPATEC_HARNESS=... bash bench/vrl.sh
#
# spatec's program is the one its plan for ENV (default c8g-8xl-ec2-docker)
# carries in the Vector entrant's default variant, or SPATEC_VRL_PROGRAM's
# file. The harness's is its entrants/vector/transform.vrl, read from the
# checkout and run, never copied. The checker is built at opt-level 3 (the
# vrl-bench profile) in a target directory of its own,
# VRL_BENCH_TARGET: the tests' build stays at its own opt-level, and a
# cold build of this one takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
harness=${SPATEC_HARNESS:?set SPATEC_HARNESS to a checkout of the public harness}
env=${ENV:-c8g-8xl-ec2-docker}
rounds=${ROUNDS:-15}
passes=${PASSES:-100}
max_ratio=${MAX_RATIO:-1.1}
target=${VRL_BENCH_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/spatec/compile/cargo-target-vrl-bench}
crate=entrants/vector/vrl
workload=workloads/sensor-batch

theirs=$harness/entrants/vector/transform.vrl
[ -f "$theirs" ] || { echo "vrl.sh: no $theirs; is SPATEC_HARNESS a checkout of the harness?" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${SPATEC_VRL_PROGRAM:-}" ]; then
  ours=$SPATEC_VRL_PROGRAM
  echo "vrl.sh: spatec's program from $ours" >&2
else
  ours=$work/spatec.vrl
  echo "vrl.sh: spatec's program from its plan for $env, vector's default variant" >&2
  go run ./bench/vrlprogram -env "$env" -o "$ours"
fi

echo "vrl.sh: building the checker (profile vrl-bench, in $target)" >&2
(cd "$crate" && CARGO_TARGET_DIR=$target cargo build --locked --profile vrl-bench --bin spatec-vrl-check)

"$target/vrl-bench/spatec-vrl-check" --bench --rounds "$rounds" --passes "$passes" --max-ratio "$max_ratio" \
  "$workload/testdata/arms/messages.bin" "$workload/sensor_batch.avsc" "$workload/testdata/arms/expected.json" \
  "spatec=$ours" "harness=$theirs"
