#!/usr/bin/env bash
# Every test of the workspace, in three lanes (the second half of `make test`, after
# tests/setup.sh): what `cargo test --workspace` runs, in less time on a 2-core machine.
#
#   bash tests/run.sh
#
# Why lanes: `cargo test` runs its test binaries one after another. The longest one,
# `e2e --test store`, mostly waits (S3 PUTs held past a deadline, a proxy's delay, moto's
# answers) while it runs its moto tests one at a time by design (tests/support/s3.rs,
# `machine_to_itself`): measured whole, 375 s of wall time for 78 s of CPU. The other test
# binaries keep about one core busy each. So after one build of every test binary:
#   lane 1: `cargo test --workspace --test store`, but for the tests that start no S3 server
#           (about a fifth of a core)
#   lane 2: `cargo test --workspace --test foundation --test openapi` (the fair-share matrix and
#           schemathesis over the three documents: the two longest CPU-bound binaries), then
#           the store binary's tests that start no S3 server (`store_local` below)
#   lane 3: every other target: the libraries', binaries' and other test targets' tests, then
#           the doc tests
# so that lanes 2 and 3 keep both cores busy while lane 1 waits. Cargo holds its build lock
# only while it builds, so the lanes run side by side on one target directory. Lane 3's output
# streams; lanes 1 and 2 are kept in target/test-lanes/lane1.log and lane2.log and printed
# when all are done, so the log reads one lane at a time. The exit status is non-zero when any
# lane failed. Lane 3's test targets are read from `cargo metadata`, so a new test target runs
# without editing this file. Every invocation selects `--workspace`: features are unified over
# the selected packages, and a narrower selection (`-p e2e`, `--exclude e2e`) would compile the
# workspace's crates a second time with other features.
set -uo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --no-run || exit 1

out=target/test-lanes
mkdir -p "$out"

# The test targets of lanes 1 and 2.
lane1="store"
lane2="foundation openapi"
# The store binary's tests that start no S3 server (sixteen threads and processes opening one
# data dir, a request's deadline, the registry's schema): lane 2 runs them after its own
# targets, and lane 1 skips them. Lane 1 was the longest (its moto tests wait, one at a time);
# these 29 s of it move to lane 2, which ended first. Each name is a module of tests/store/ (a
# filter of libtest: `name::` matches the module's tests).
store_local="open_race:: deadlines:: registry_schema::"

# Every test target of the workspace except those of lanes 1 and 2, as `--test NAME` arguments.
other_tests=$(cargo metadata --no-deps --format-version 1 | TAKEN="$lane1 $lane2" python3 -c '
import json, os, sys
taken = os.environ["TAKEN"].split()
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "test" in target["kind"] and target["name"] not in taken:
            print("--test", target["name"])
') || exit 1

started=$(date +%s)
pids=()
# Each background lane in a session of its own (its pid is its process group), so that when
# this script is interrupted (Ctrl-C, a CI timeout) the whole lane stops with it: cargo, the
# test binary and the servers it started.
start_lane() { # number, shell commands (exit status: the lane's)
  setsid bash -c "$2" >"$out/lane$1.log" 2>&1 &
  pids+=("$!")
}
# shellcheck disable=SC2046,SC2086 # the targets and filters are words
start_lane 1 "cargo test --workspace $(printf -- '--test %s ' $lane1) --no-fail-fast -- $(printf -- '--skip %s ' $store_local)"
# shellcheck disable=SC2046,SC2086 # the targets are words
start_lane 2 "status=0
cargo test --workspace $(printf -- '--test %s ' $lane2) --no-fail-fast || status=1
cargo test --workspace --test store --no-fail-fast -- $store_local || status=1
exit \$status"
trap 'for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null; done; exit 130' INT TERM

rest_status=0
# shellcheck disable=SC2086 # the targets are words
cargo test --workspace --lib --bins $other_tests --no-fail-fast || rest_status=1
cargo test --workspace --doc --no-fail-fast || rest_status=1
rest_took=$(($(date +%s) - started))

statuses=()
for i in 0 1; do
  wait "${pids[$i]}"
  statuses+=("$?")
done
# A lane's own time: its log was last written when its cargo ended.
took() { echo $(($(stat -c %Y "$out/lane$1.log") - started)); }

echo
echo "== lane 1: cargo test --workspace --test store, but for $store_local (log: $out/lane1.log)"
cat "$out/lane1.log"
echo
echo "== lane 2: cargo test --workspace --test foundation --test openapi, then the store's $store_local (log: $out/lane2.log)"
cat "$out/lane2.log"
echo
echo "== lanes: $lane1 $(took 1)s (exit ${statuses[0]}), $lane2 $(took 2)s (exit ${statuses[1]}), the rest ${rest_took}s (exit $rest_status)"
[ "${statuses[0]}" -eq 0 ] && [ "${statuses[1]}" -eq 0 ] && [ "$rest_status" -eq 0 ]
