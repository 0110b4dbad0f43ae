#!/usr/bin/env bash
# How much of the machine bulk-50 posting takes, per call, at several connection counts:
# for each count, wrk (1 thread) posts for DURATION against one local server and the script
# prints the rate, how busy the whole machine was (cores, from /proc/stat), the server's CPU
# (cores, and milliseconds per call, from /proc/<pid>/stat: every thread of the server,
# checkpoints included) and wrk's own CPU. It answers whether a rate is bound by the CPU
# (the machine near its cores, more connections barely faster) or by waiting (idle cores),
# which decides what an optimisation can gain (docs/usage.md, "Eighth round").
#
# Not part of `cargo test`. Usage:
#   bench/saturation.sh
# Environment (all optional):
#   PROFILE=release      cargo profile of the sandbox binary (built under `nice -n 15`)
#   SANDBOX_BIN=path     use this binary instead of building one
#   CONNS="1 2 4 8"      connection counts, in this order
#   DURATION=8 (seconds)  WARMUP=3s  PORT=18083
#   TMPDIR               where the server's data dir goes (disk by default; /dev/shm for RAM)
# Needs: cargo, wrk, curl, GNU time (/usr/bin/time).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
duration="${DURATION:-8}"
warmup="${WARMUP:-3s}"
port="${PORT:-18083}"
conns="${CONNS:-1 2 4 8}"

for tool in wrk curl /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "saturation: $tool is required" >&2; exit 2; }
done

bench=saturation
source "$here/lib.sh"
sandbox_binary
start_sandbox sandbox "$SANDBOX_BIN" "$port"
pid="${pids[0]}"
BENCH_API_KEY="$(sandbox_key sandbox)"
export BENCH_API_KEY
url="http://127.0.0.1:$port/billing/2/usage-events/bulk"
wrk -t1 -c4 -d"$warmup" -s "$here/peer/sandbox-post.lua" "$url" >/dev/null

hz="$(getconf CLK_TCK)"
cpus="$(nproc)"
# Jiffies of the whole machine: total and idle (idle + iowait).
machine() { awk '/^cpu / {t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $5 + $6}' /proc/stat; }
# Jiffies of the server process (user + system, all its threads).
server() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

echo "saturation: bulk-50 posting, wrk -t1 -d${duration}s; $cpus CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%5s %10s %14s %14s %16s %10s\n' conns calls/s machine-cores server-cores server-ms/call wrk-cores
for c in $conns; do
  read -r t0 i0 < <(machine); s0="$(server)"
  /usr/bin/time -f "%U %S" -o "$work/time" \
    wrk -t1 -c"$c" -d"${duration}s" -s "$here/peer/sandbox-post.lua" "$url" >"$work/wrk"
  read -r t1 i1 < <(machine); s1="$(server)"
  if grep -qE 'Non-2xx|Socket errors' "$work/wrk"; then
    echo "saturation: errors at $c connections:" >&2; cat "$work/wrk" >&2; exit 1
  fi
  rps="$(awk '/Requests\/sec/ {print $2}' "$work/wrk")"
  awk -v c="$c" -v rps="$rps" -v dt=$((t1 - t0)) -v di=$((i1 - i0)) -v ds=$((s1 - s0)) \
      -v hz="$hz" -v n="$cpus" -v d="$duration" -v w="$(cat "$work/time")" 'BEGIN {
    split(w, u, " ");
    printf "%5d %10.0f %14.2f %14.2f %16.3f %10.2f\n", c, rps, n * (1 - di / dt),
      ds / hz / d, ds / hz * 1000 / d / rps, (u[1] + u[2]) / d
  }'
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
