# What the wrk benches share (sourced by ab.sh, saturation.sh and vs-prism.sh): a scratch
# folder whose servers are stopped on exit, the sandbox binary, and a sandbox server started
# on its own data dir with the tenant key its banner prints.
#
# The caller sets `bench` (its name, in messages) before sourcing. Afterwards `work` is the
# scratch folder and `pids` the servers to stop; start servers with `start_sandbox`, never
# inside `$(...)`: a command substitution runs in a subshell, whose pids the cleanup never
# sees, so the servers would outlive the bench (and take CPU from whatever ran next).

bench_lib="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
pids=()
bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap bench_cleanup EXIT

# Sets SANDBOX_BIN: kept when given, else built with the cargo profile PROFILE (default
# release) under `nice -n 15`.
sandbox_binary() {
  [[ -n "${SANDBOX_BIN:-}" ]] && return 0
  local profile="${PROFILE:-release}" dir
  echo "$bench: building the sandbox ($profile profile, nice -n 15)..." >&2
  (cd "$bench_lib/.." && nice -n 15 cargo build --quiet --profile "$profile" -p sandbox)
  dir="$profile"; [[ "$profile" == dev ]] && dir=debug
  SANDBOX_BIN="${CARGO_TARGET_DIR:-$bench_lib/../target}/$dir/sandbox"
}

# start_sandbox NAME BIN PORT: serves BIN on 127.0.0.1:PORT from $work/NAME (its output in
# $work/NAME.out and .err), adds its pid to `pids`, and waits for its banner (up to 30 s).
start_sandbox() {
  "$2" serve --listen "127.0.0.1:$3" --data-dir "$work/$1" --admin-key "adm_bench" \
    >"$work/$1.out" 2>"$work/$1.err" &
  pids+=($!)
  for _ in $(seq 1 300); do grep -q 'api key:' "$work/$1.out" 2>/dev/null && return 0; sleep 0.1; done
}

# sandbox_key NAME: the tenant API key server NAME's banner printed; fails the bench without.
sandbox_key() {
  local key
  key="$(awk '/api key:/ {print $3}' "$work/$1.out")"
  [[ -n "$key" ]] || { echo "$bench: $1 printed no api key" >&2; cat "$work/$1.out" "$work/$1.err" >&2; exit 1; }
  echo "$key"
}
