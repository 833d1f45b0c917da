#!/usr/bin/env bash
# spate's flatten a message beside the public harness's method (each Avro
# field read by its position alone), on the workload's arm corpus, in one
# release build, in interleaved rounds timed by the thread's CPU time:
# prints each's median and range and their ratio. ROUNDS=N sets the rounds
# (15).
set -euo pipefail
cd "$(dirname "$0")/../entrants/spate/arm"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spatec/compile/cargo-target}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if ! cargo test --release --locked --test flatten_cost -- --ignored --nocapture >"$out" 2>&1; then
  cat "$out" >&2
  exit 1
fi
sed -n '/^flatten,/,/ratio/p' "$out"
