#!/usr/bin/env bash
# spate's flatten a message beside the public harness's method (each Avro
# field read by its position alone), on the workload's arm corpus, in one
# release build, interleaved rounds: prints each's median and range and
# their ratio. ROUNDS=N sets the rounds (15).
set -euo pipefail
cd "$(dirname "$0")/../entrants/spate/arm"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spatec/compile/cargo-target}"
cargo test --release --locked --test flatten_cost -- --ignored --nocapture 2>&1 |
  sed -n '/^flatten,/,/ratio/p'
