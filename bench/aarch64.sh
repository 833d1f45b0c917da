#!/usr/bin/env bash
# Builds on this host every image spatec builds for the plans of the public
# harness's Graviton host (c8g-8xl-ec2-docker, arm64), as spatec exec would
# build them there, and prints each image's architecture as the engine
# reports it, how long it took, and the version its entrant reads inside it,
# run under emulation (bench/aarch64/main.go).
#
# Slow the first time (a Debian root file system installed under qemu, the
# spate arm's crate cross-compiled), so it is not part of CI, whose share is
# the Go program built for arm64 (exec's
# TestProgramIsBuiltForTheEnvironmentsArchitecture) and a small crate
# cross-compiled (compile's
# TestACrateIsCrossCompiledForTheEnvironmentsArchitecture).
#
# On a host that is not arm64 it installs, when missing, what building for
# arm64 takes: Debian's qemu-user-static and binfmt-support, which register
# the aarch64 emulator with binfmt_misc (mounted first when it is not), so
# that mmdebstrap can run the arm64 packages' scripts and the engine the
# arm64 images; arch-test, mmdebstrap's check of that; gcc-aarch64-linux-gnu
# and g++-aarch64-linux-gnu, the spate crate's linker and the compilers of
# the C and C++ it builds (librdkafka); Rust's aarch64 standard library for
# the toolchain the crate pins.
#
#   bash bench/aarch64.sh [env]      (default c8g-8xl-ec2-docker)
set -euo pipefail
cd "$(dirname "$0")/.."
env=${1:-c8g-8xl-ec2-docker}

log() { printf 'aarch64: %s\n' "$*" >&2; }

if [ "$(uname -m)" != aarch64 ]; then
  need=()
  command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
  command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
  command -v update-binfmts >/dev/null 2>&1 || need+=(binfmt-support)
  command -v arch-test >/dev/null 2>&1 || need+=(arch-test)
  command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
  command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need+=(g++-aarch64-linux-gnu)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  binfmt=/proc/sys/fs/binfmt_misc
  if [ ! -e "$binfmt/status" ]; then
    log "mounting binfmt_misc"
    mount -t binfmt_misc binfmt_misc "$binfmt"
  fi
  if ! grep -q '^enabled' "$binfmt/qemu-aarch64" 2>/dev/null; then
    log "registering qemu-aarch64 with binfmt_misc"
    update-binfmts --enable qemu-aarch64
  fi
  # The interpreter is opened when it is registered (flag F), so that it
  # runs arm64 binaries inside containers and chroots too.
  grep -q '^flags:.*F' "$binfmt/qemu-aarch64" || { log "qemu-aarch64 is registered without flag F: $(cat "$binfmt/qemu-aarch64")"; exit 1; }
  rust=$(sed -n 's/^channel = "\(.*\)"/\1/p' entrants/spate/arm/rust-toolchain.toml)
  if ! rustup target list --installed --toolchain "$rust" | grep -qx aarch64-unknown-linux-gnu; then
    log "adding Rust's aarch64-unknown-linux-gnu target to $rust"
    rustup target add --toolchain "$rust" aarch64-unknown-linux-gnu >/dev/null
  fi
fi

go run ./bench/aarch64 -env "$env"
