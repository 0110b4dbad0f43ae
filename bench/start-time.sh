#!/usr/bin/env bash
# Process start to first answered request of `sandbox serve` in S3 mode: the registry is
# cold-loaded from a bucket on a local moto server (pip install -r tests/requirements.txt).
#
#   bench/start-time.sh [runs]          # builds target/release/sandbox first
#   SANDBOX_BIN=path/to/sandbox bench/start-time.sh [runs]
#
# Each run starts the binary on a fresh data directory (an empty local cache, as a new Lambda
# environment has), polls GET /sandbox/v1/tenants every 2 ms until it answers 200, and
# kills it. The first start (not counted) seeds the bucket with the demo tenant. Prints every
# run and the median, in milliseconds. A bench, not a test: the number moves with the load.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-11}"
bin="${SANDBOX_BIN:-}"
if [ -z "$bin" ]; then
    cargo build --release -p sandbox >&2
    bin="${CARGO_TARGET_DIR:-target}/release/sandbox"
fi
python3 -c 'import moto' 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt >&2

exec python3 - "$bin" "$runs" <<'PY'
import http.client, os, shutil, socket, statistics, subprocess, sys, tempfile, time

bin_path, runs = sys.argv[1], int(sys.argv[2])

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def answers(port, path, headers):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", path, headers=headers)
        return c.getresponse().status
    except OSError:
        return None

moto_port = free_port()
moto = subprocess.Popen(
    [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
scratch = tempfile.mkdtemp(prefix="start-time-")
try:
    deadline = time.time() + 30
    while answers(moto_port, "/", {}) is None:
        if time.time() > deadline:
            sys.exit("moto did not start")
        time.sleep(0.05)
    c = http.client.HTTPConnection("127.0.0.1", moto_port)
    c.request("PUT", "/start-time")  # create the bucket
    c.getresponse().read()
    env = dict(os.environ, RUST_LOG="warn", AWS_ACCESS_KEY_ID="test",
               AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1",
               SANDBOX_S3_BUCKET="start-time", SANDBOX_S3_PREFIX="bench/",
               SANDBOX_S3_ENDPOINT=f"http://127.0.0.1:{moto_port}")

    def start_to_first_answer(i):
        port = free_port()
        data = os.path.join(scratch, str(i))
        t = time.perf_counter()
        p = subprocess.Popen(
            [bin_path, "serve", "--listen", f"127.0.0.1:{port}", "--admin-key",
             "bench-admin-key-0123", "--data-dir", data],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while answers(port, "/sandbox/v1/tenants",
                          {"X-Admin-Key": "bench-admin-key-0123"}) != 200:
                if p.poll() is not None:
                    sys.exit(f"{bin_path} exited with {p.returncode}")
                if time.perf_counter() - t > 120:
                    sys.exit("no answer within 120 s")
                time.sleep(0.002)
            return (time.perf_counter() - t) * 1000
        finally:
            p.kill()
            p.wait()

    start_to_first_answer("seed")
    times = [start_to_first_answer(i) for i in range(runs)]
    print("start to first answer (ms):", " ".join(f"{x:.0f}" for x in times))
    print(f"median {statistics.median(times):.0f} ms, min {min(times):.0f}, max {max(times):.0f} "
          f"({runs} runs, {bin_path}, S3 mode on moto)")
finally:
    moto.kill()
    moto.wait()
    shutil.rmtree(scratch, ignore_errors=True)
PY
