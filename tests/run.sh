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
#   lane 1: `cargo test -p e2e --test store`
#   lane 2: every other target: the libraries', binaries' and other test targets' tests, then
#           the doc tests
# Cargo holds its build lock only while it builds, so the two run side by side on one target
# directory. Lane 2's output streams; lane 1's is kept in target/test-lanes/store.log and
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
store_log="$out/store.log"

# Every test target of the workspace except the store binary, as `--test NAME` arguments.
other_tests=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    for target in package["targets"]:
        if "test" in target["kind"] and target["name"] != "store":
            print("--test", target["name"])
') || exit 1

started=$(date +%s)
# In a session of its own (its pid is its process group), so that when this script is
# interrupted (Ctrl-C, a CI timeout) the whole lane stops with it: cargo, the test binary and
# the servers it started.
setsid cargo test --workspace --test store --no-fail-fast >"$store_log" 2>&1 &
store_pid=$!
trap 'kill -- "-$store_pid" 2>/dev/null; exit 130' INT TERM

rest_status=0
# shellcheck disable=SC2086 # the targets are words
cargo test --workspace --lib --bins $other_tests --no-fail-fast || rest_status=1
cargo test --workspace --doc --no-fail-fast || rest_status=1
rest_took=$(($(date +%s) - started))

wait "$store_pid"
store_status=$?
# The lane's own time: its log was last written when its cargo ended.
store_took=$(($(stat -c %Y "$store_log") - started))

echo
echo "== lane 1: cargo test --workspace --test store (log: $store_log)"
cat "$store_log"
echo
echo "== lanes: store ${store_took}s (exit $store_status), the rest ${rest_took}s (exit $rest_status)"
[ "$store_status" -eq 0 ] && [ "$rest_status" -eq 0 ]
