#!/usr/bin/env bash
# The flake hunt: runs the whole test command RUNS times (default 3), then the
# concurrency-heavy test binaries PINNED times each (default 2) pinned to one core (taskset),
# where a test that orders events by timing breaks first, then DISK times each (default 1)
# beside two loops that write and sync 300 MB files, where a test that times a synced write
# breaks first; it reports every failure by run, test binary and test name. Exit 0 only when
# nothing failed.
#
#   bash tests/flake-hunt.sh [RUNS] [PINNED] [DISK]    # or: make flake-hunt RUNS=5
#
# Logs and the report go to target/flake-hunt/ (report.txt). A failure is a defect to fix at
# its cause (docs/testing.md), never a test to retry.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
pinned=${2:-2}
disk=${3:-1}
out=target/flake-hunt
mkdir -p "$out"
report="$out/report.txt"
: >"$report"

bash tests/setup.sh || exit 1
cargo test --workspace --no-run --quiet || exit 1

# Failures of one cargo test log, one line each: "<binary>: <test name>", or
# "<binary>: (the binary failed outside a test)" when it ended badly with no failed test.
failures() {
  awk '
    /^     Running / { bin = $2; failed_here = 0 }
    /^test .* \.\.\. FAILED$/ { sub(/^test /, ""); sub(/ \.\.\. FAILED$/, ""); print bin ": " $0; failed_here = 1; any = 1 }
    /^error: test failed, to rerun pass/ && !failed_here { print bin ": (the binary failed outside a test)" }
  ' "$1"
}

total_failures=0
record() { # name log seconds status
  local found
  found=$(failures "$2")
  local count
  count=$(printf '%s' "$found" | grep -c . || true)
  if [ "$4" -ne 0 ] && [ "$count" -eq 0 ]; then
    found="(exit $4 with no failed test: see $2)"
    count=1
  fi
  total_failures=$((total_failures + count))
  local passed
  passed=$(grep -E '^test result:' "$2" | awk '{ s += $4 } END { print s + 0 }')
  echo "$1: ${3}s, $passed passed, $count failed" | tee -a "$report"
  if [ -n "$found" ]; then
    printf '%s\n' "$found" | sed 's/^/    /' | tee -a "$report"
  fi
}

for i in $(seq 1 "$runs"); do
  log="$out/run-$i.log"
  start=$(date +%s)
  bash tests/run.sh >"$log" 2>&1
  status=$?
  record "run $i of $runs (tests/run.sh, as make test)" "$log" $(($(date +%s) - start)) "$status"
done

# The binaries whose tests race threads, processes and S3 environments against each other.
# Each with --workspace, as tests/run.sh: features unify over the whole workspace, so the
# pinned runs reuse the test build instead of compiling the crates again with fewer features.
heavy=("--workspace --test store" "--workspace --test foundation" "--workspace --lib")
# One round of the heavy binaries: each run once, its command prefixed by the words after the
# first two (none, or taskset), its log $out/<log prefix><binary>.log.
heavy_round() { # label, log prefix, command prefix...
  local label=$1 prefix=$2 args name log start status
  shift 2
  for args in "${heavy[@]}"; do
    name=$(echo "$args" | tr -s ' -' '_')
    log="$out/$prefix$name.log"
    start=$(date +%s)
    # shellcheck disable=SC2086 # the arguments are words
    "$@" cargo test $args --no-fail-fast >"$log" 2>&1
    status=$?
    record "$label: cargo test $args" "$log" $(($(date +%s) - start)) "$status"
  done
}
for i in $(seq 1 "$pinned"); do
  heavy_round "pinned to one core, round $i" "pinned-$i" taskset -c 0
done

# The same binaries beside two writers that sync 300 MB at a time (the disk of a CI host
# shared with other jobs): a test that counts a sync against a deadline breaks here (the
# request-deadline test did, its undo image's sync taking the whole 500 ms, until its data
# moved to memory). Each writer is a session of its own, stopped with its children at the end.
loads=()
stop_loads() { for pid in "${loads[@]}"; do kill -- "-$pid" 2>/dev/null; done; loads=(); rm -f "$out"/disk-load-*; }
trap stop_loads EXIT
for i in $(seq 1 "$disk"); do
  for n in 1 2; do
    setsid bash -c "while :; do dd if=/dev/zero of='$out/disk-load-$n' bs=1M count=300 conv=fsync status=none; done" &
    loads+=("$!")
  done
  heavy_round "beside two syncing writers, round $i" "disk-$i"
  stop_loads
done

echo "flake hunt: $total_failures failures (report: $report)" | tee -a "$report"
[ "$total_failures" -eq 0 ]
