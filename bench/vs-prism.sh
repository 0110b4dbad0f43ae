#!/usr/bin/env bash
# Side-by-side bench: the local sandbox server against Prism, a stateless OpenAPI
# mock from npm serving a minimal spec of the same calls (bench/peer/billing-v2-min.yaml).
# For each call, wrk (1 thread, 4 connections) runs against the sandbox and then Prism,
# ROUNDS times (A B A B ...), and the script prints both rates and the ratio of each round:
# ratios are only taken within one round, because the machine's load moves absolute numbers.
#
# Calls: bulk-50 usage posting (every call's 50 events rated and stored: bench/peer/
# sandbox-post.lua gives each call its own reference_id), the agreements page
# (page_size=5), one agreement, and a filtered, sorted agreement-services page.
#
# Not part of `cargo test`. Usage:
#   bench/vs-prism.sh
# Environment (all optional):
#   PROFILE=release      cargo profile of the sandbox binary (built under `nice -n 15`)
#   SANDBOX_BIN=path     use this binary instead of building one
#   PRISM_DIR=dir        scratch folder of the npm install (default ~/.cache/vs-prism)
#   DURATION=8s WARMUP=2s ROUNDS=3 CONNECTIONS=4 SANDBOX_PORT=18080 PRISM_PORT=14010
#   CALLS="bulk agreements agreement agreement-services"   a subset of the calls
# Needs: cargo, wrk, node and npm (Prism is installed into PRISM_DIR when missing), curl.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
duration="${DURATION:-8s}"
warmup="${WARMUP:-2s}"
rounds="${ROUNDS:-3}"
connections="${CONNECTIONS:-4}"
sandbox_port="${SANDBOX_PORT:-18080}"
prism_port="${PRISM_PORT:-14010}"
prism_dir="${PRISM_DIR:-$HOME/.cache/vs-prism}"
calls="${CALLS:-bulk agreements agreement agreement-services}"

for tool in wrk curl node npm; do
  command -v "$tool" >/dev/null || { echo "vs-prism: $tool is required (wrk: apt-get install wrk)" >&2; exit 2; }
done

bench=vs-prism
source "$here/lib.sh"

# 1. The sandbox binary.
sandbox_binary

# 2. Prism, installed once into a scratch folder.
prism="$prism_dir/node_modules/.bin/prism"
if [[ ! -x "$prism" ]]; then
  echo "installing @stoplight/prism-cli into $prism_dir..." >&2
  mkdir -p "$prism_dir"
  (cd "$prism_dir" && npm install --silent --no-audit --no-fund @stoplight/prism-cli >&2)
fi

wait_for() { # url [header]
  for _ in $(seq 1 300); do
    if curl -fsS -o /dev/null ${2:+-H "$2"} "$1" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "vs-prism: $1 did not answer" >&2
  return 1
}

# 3. Both servers.
"$prism" mock -p "$prism_port" "$here/peer/billing-v2-min.yaml" >"$work/prism.out" 2>&1 &
pids+=($!)
start_sandbox sandbox "$SANDBOX_BIN" "$sandbox_port"
key="$(sandbox_key sandbox)"
export BENCH_API_KEY="$key"
sb="http://127.0.0.1:$sandbox_port/billing/2"
pr="http://127.0.0.1:$prism_port"
wait_for "$sb/agreements?page_size=1" "X-Api-Key: $key"
wait_for "$pr/agreements?page_size=1" "X-Api-Key: k"

filter='filter=status%20EQ%20%27ACTIVE%27&sort=-minimum_amount&page_size=5'
agreement_id="$(curl -fsS -H "X-Api-Key: $key" "$sb/agreements?page_size=1" | sed -n 's/^\[{"id":"\([0-9]*\)".*/\1/p')"
[[ -n "$agreement_id" ]] || { echo "vs-prism: no agreement in the demo data" >&2; exit 1; }

# The bulk call must rate and store all 50 events (checked once, on a call of its own).
check="$(BENCH_API_KEY="$key" wrk -t1 -c1 -d1s -s "$here/peer/sandbox-post.lua" "$sb/usage-events/bulk" 2>&1 | grep -c 'Non-2xx' || true)"
[[ "$check" == 0 ]] || { echo "vs-prism: the sandbox refused bulk calls" >&2; exit 1; }
body="$(curl -fsS -H "X-Api-Key: $key" -H 'Content-Type: application/json' "$sb/usage-events/bulk" \
  -d '{"mode":"FAIL_ON_EXISTING","usage_events":[{"start_time":"2026-11-02T10:00:00Z","service_resource_identifier":"srv-compute-0001","usage_uom":"MINUTE","usage_amount":5}]}')"
[[ "$body" == *'"erred_events":[]'* ]] || { echo "vs-prism: the bench event is not rated: $body" >&2; exit 1; }

# One wrk run: prints requests/s; any non-2xx answer or socket error fails the bench.
run() { # url lua|-  header [duration]
  local out d="${4:-$duration}"
  if [[ "$2" != - ]]; then
    out="$(wrk -t1 -c"$connections" -d"$d" -s "$2" "$1" 2>&1)"
  else
    out="$(wrk -t1 -c"$connections" -d"$d" -H "$3" "$1" 2>&1)"
  fi
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
    echo "vs-prism: errors against $1:" >&2; echo "$out" >&2; exit 1
  fi
  awk '/Requests\/sec/ {printf "%.0f", $2}' <<<"$out"
}

echo "vs-prism: wrk -t1 -c$connections -d$duration after a $warmup warm-up, $rounds rounds (sandbox then Prism each round); $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-20s %5s %12s %12s %8s\n' call round sandbox prism ratio
for call in $calls; do
  case "$call" in
    bulk) a=("$sb/usage-events/bulk" "$here/peer/sandbox-post.lua" -); b=("$pr/usage-events/bulk" "$here/peer/prism-post.lua" -) ;;
    agreements) a=("$sb/agreements?page_size=5" - "X-Api-Key: $key"); b=("$pr/agreements?page_size=5" - "X-Api-Key: k") ;;
    agreement) a=("$sb/agreements/$agreement_id" - "X-Api-Key: $key"); b=("$pr/agreements/$agreement_id" - "X-Api-Key: k") ;;
    agreement-services) a=("$sb/agreement-services?$filter" - "X-Api-Key: $key"); b=("$pr/agreement-services?$filter" - "X-Api-Key: k") ;;
    *) echo "vs-prism: unknown call $call" >&2; exit 2 ;;
  esac
  # Warm-up of both (Node's JIT, SQLite's page cache), not counted.
  run "${a[@]}" "$warmup" >/dev/null; run "${b[@]}" "$warmup" >/dev/null
  ratios=()
  for round in $(seq 1 "$rounds"); do
    x="$(run "${a[@]}")"; y="$(run "${b[@]}")"
    r="$(awk -v x="$x" -v y="$y" 'BEGIN {printf "%.2f", x / y}')"
    ratios+=("$r")
    printf '%-20s %5s %12s %12s %8s\n' "$call" "$round" "$x/s" "$y/s" "$r"
  done
  printf '%-20s %5s %12s %12s %8s\n' "$call" range "" "" "$(printf '%s\n' "${ratios[@]}" | sort -n | sed -n '1p;$p' | paste -sd- -)"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
