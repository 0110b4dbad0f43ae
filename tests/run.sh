#!/usr/bin/env bash
# Every test of the workspace, in two lanes (the second half of `make test`, after
# tests/setup.sh): what `cargo test --workspace` runs, in less time on a 2-core machine.
#
#   bash tests/run.sh
#
# Why two lanes: `cargo test` runs its test binaries one after another, and the longest one,
# `e2e --test store`, spends half its time waiting (S3 PUTs held past a deadline, a proxy's
# delay, moto servers starting) while running its moto tests one at a time by design
# (tests/support/s3.rs, `machine_to_itself`). It uses about one core on average; everything
# else, run one binary after another, about one core too. So after one build of every test
# binary:
#   lane 1: `cargo test --workspace --test store --test foundation` (the store binary, then
#           the foundation binary, so that the two lanes take about as long: measured, the
#           store binary 263 s, foundation 78 s, the rest 327 s)
#   lane 2: every other target: the libraries', binaries' and other test targets' tests, then
#           the doc tests
# Cargo holds its build lock only while it builds, so the two run side by side on one target
# directory. Lane 2's output streams; lane 1's is kept in target/test-lanes/lane1.log and
# printed when both are done, so the log reads one lane at a time. The exit status is non-zero
# when either lane failed. Lane 2's test targets are read from `cargo metadata`, so a new test
# target runs without editing this file. Every invocation selects `--workspace`: features are
# unified over the selected packages, and a narrower selection (`-p e2e`, `--exclude e2e`)
# would compile the workspace's crates a second time with other features.
set -uo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --no-run || exit 1

out=target/test-lanes
mkdir -p "$out"
lane1_log="$out/lane1.log"

# Lane 1's test targets.
lane1="store foundation"

# Every test target of the workspace except lane 1's, as `--test NAME` arguments.
other_tests=$(cargo metadata --no-deps --format-version 1 | LANE1="$lane1" python3 -c '
import json, os, sys
lane1 = os.environ["LANE1"].split()
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "test" in target["kind"] and target["name"] not in lane1:
            print("--test", target["name"])
') || exit 1
# shellcheck disable=SC2086 # the targets are words
lane1_tests=$(printf -- '--test %s ' $lane1)

started=$(date +%s)
# In a session of its own (its pid is its process group), so that when this script is
# interrupted (Ctrl-C, a CI timeout) the whole lane stops with it: cargo, the test binary and
# the servers it started.
# shellcheck disable=SC2086 # the targets are words
setsid cargo test --workspace $lane1_tests --no-fail-fast >"$lane1_log" 2>&1 &
lane1_pid=$!
trap 'kill -- "-$lane1_pid" 2>/dev/null; exit 130' INT TERM

rest_status=0
# shellcheck disable=SC2086 # the targets are words
cargo test --workspace --lib --bins $other_tests --no-fail-fast || rest_status=1
cargo test --workspace --doc --no-fail-fast || rest_status=1
rest_took=$(($(date +%s) - started))

wait "$lane1_pid"
lane1_status=$?
# The lane's own time: its log was last written when its cargo ended.
lane1_took=$(($(stat -c %Y "$lane1_log") - started))

echo
echo "== lane 1: cargo test --workspace $lane1_tests(log: $lane1_log)"
cat "$lane1_log"
echo
echo "== lanes: $lane1 ${lane1_took}s (exit $lane1_status), the rest ${rest_took}s (exit $rest_status)"
[ "$lane1_status" -eq 0 ] && [ "$rest_status" -eq 0 ]
