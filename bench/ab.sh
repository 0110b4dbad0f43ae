#!/usr/bin/env bash
# A/B bench of two builds of the local server (the request pipeline's per-request
# overhead): the same calls against a baseline binary (A) and a candidate (B), each on its
# own port and data dir, with wrk (1 thread, 4 connections), printing both rates and B/A per
# round: ratios are taken within a round only, because the machine's load moves absolute
# numbers. Odd rounds run A then B, even rounds B then A: the server measured second in a
# round ran slower (the same binary as A and B: 0.985 with A always first), and alternating
# cancels that.
#
# Calls: one Surface B record (GET /billing/2/adjustment-categories/5) and a bulk post of 50
# usage events (bench/peer/sandbox-post.lua: every call's 50 events rated and stored).
#
# Not part of `cargo test`. Usage:
#   bench/ab.sh BASELINE_BIN CANDIDATE_BIN
# e.g. both built with `cargo build --profile profiling -p sandbox` from two checkouts.
# Environment (optional): DURATION=6s WARMUP=2s ROUNDS=6 CONNECTIONS=4 A_PORT=18081 B_PORT=18082
# CALLS="get bulk" (either or both)
# Needs: wrk, curl.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
a_bin="${1:?baseline binary}"; b_bin="${2:?candidate binary}"
duration="${DURATION:-6s}"; warmup="${WARMUP:-2s}"; rounds="${ROUNDS:-6}"
connections="${CONNECTIONS:-4}"; calls="${CALLS:-get bulk}"; a_port="${A_PORT:-18081}"; b_port="${B_PORT:-18082}"

for tool in wrk curl; do
  command -v "$tool" >/dev/null || { echo "ab: $tool is required (apt-get install $tool)" >&2; exit 2; }
done
bench=ab
source "$here/lib.sh"
start_sandbox a "$a_bin" "$a_port"; start_sandbox b "$b_bin" "$b_port"
a_key="$(sandbox_key a)"; b_key="$(sandbox_key b)"

run() { # key url lua|- [duration]
  local out d="${4:-$duration}"
  if [[ "$3" != - ]]; then
    out="$(BENCH_API_KEY="$1" wrk -t1 -c"$connections" -d"$d" -s "$3" "$2" 2>&1)"
  else
    out="$(wrk -t1 -c"$connections" -d"$d" -H "X-Api-Key: $1" "$2" 2>&1)"
  fi
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then echo "ab: errors against $2:" >&2; echo "$out" >&2; exit 1; fi
  awk '/Requests\/sec/ {printf "%.0f", $2}' <<<"$out"
}

echo "ab: wrk -t1 -c$connections -d$duration after a $warmup warm-up, $rounds rounds (odd: A then B; even: B then A); $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %5s %12s %12s %8s\n' call round A B B/A
for call in $calls; do
  case "$call" in
    get) path=/billing/2/adjustment-categories/5; lua=- ;;
    bulk) path=/billing/2/usage-events/bulk; lua="$here/peer/sandbox-post.lua" ;;
    *) echo "ab: unknown call '$call' (CALLS: get, bulk)" >&2; exit 2 ;;
  esac
  run "$a_key" "http://127.0.0.1:$a_port$path" "$lua" "$warmup" >/dev/null
  run "$b_key" "http://127.0.0.1:$b_port$path" "$lua" "$warmup" >/dev/null
  ratios=()
  for round in $(seq 1 "$rounds"); do
    if ((round % 2)); then
      x="$(run "$a_key" "http://127.0.0.1:$a_port$path" "$lua")"
      y="$(run "$b_key" "http://127.0.0.1:$b_port$path" "$lua")"
    else
      y="$(run "$b_key" "http://127.0.0.1:$b_port$path" "$lua")"
      x="$(run "$a_key" "http://127.0.0.1:$a_port$path" "$lua")"
    fi
    r="$(awk -v x="$x" -v y="$y" 'BEGIN {printf "%.3f", y / x}')"; ratios+=("$r")
    printf '%-6s %5s %12s %12s %8s\n' "$call" "$round" "$x/s" "$y/s" "$r"
  done
  printf '%-6s %5s %12s %12s %8s\n' "$call" median "" "" "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
