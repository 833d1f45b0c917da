#!/usr/bin/env bash
# Runs the fault tests (cmd/spatec/faults_test.go) against the real engine,
# ClickHouse and the local-containers infrastructure, and prints the fault
# table: each fault, how the run ended, what spatec left behind on the
# engine, and how many records were lost. Needs the services; it starts
# them (bash .ci/services). About 20 minutes once the images are built.
#
#   bash bench/faults.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/services
status=0
out=$(go test -count=1 -timeout 45m -run '^TestFault' -v ./cmd/spatec 2>&1) || status=$?
echo '| fault | outcome | left behind | records lost |'
echo '|---|---|---|---|'
echo "$out" | sed -n 's/.*fault-row|//p' | awk -F'|' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }'
if [ "$status" -ne 0 ]; then
  echo "$out" | grep -E -- '^(--- FAIL|\s+faults_test)' >&2 || true
fi
exit "$status"
