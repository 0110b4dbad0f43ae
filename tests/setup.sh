#!/usr/bin/env bash
# Installs what the test suite runs besides Rust, each part only when it is missing, so that
# `make test` passes on a fresh machine with nothing installed by hand. The one place that
# installs test tools: the tests themselves only check and name this script when one is
# missing.
#
#   Python tools (tests/requirements.txt): moto's S3 server, schemathesis, openapi-core,
#     openapi-python-client, jsonschema, xmlschema, xsdata. `pip install -r` is a no-op when
#     every pin is satisfied.
#   npm tools (tests/clients/npm-tools.txt): openapi-typescript and tsc, `npm install
#     --global`.
#   Chromium and chromedriver (the console's browser test): Debian's packages through
#     apt-get (with sudo when not root). Without apt-get it stops and says what to install.
#
# Needs: python3 with pip, node with npm (both on a fresh machine of the project's kind).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "== setup: $*"; }
missing() {
  echo "setup: $1 is missing; install it, then run 'make test' again" >&2
  exit 1
}

command -v python3 >/dev/null 2>&1 || missing "python3 (with pip)"
# pip takes about 5 s to find every pin satisfied; pkg_resources checks the same pins, their
# extras and everything they require in about 1 s, so pip runs only when that check fails
# (or when pkg_resources itself is absent).
pins_satisfied() {
  python3 -W ignore - tests/requirements.txt >/dev/null 2>&1 <<'PY'
import sys
import pkg_resources
lines = (line.split("#")[0].strip() for line in open(sys.argv[1], encoding="utf-8"))
pkg_resources.require([line for line in lines if line])
PY
}
if pins_satisfied; then
  say "python tools (tests/requirements.txt): installed"
else
  say "python tools (tests/requirements.txt)"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r tests/requirements.txt
fi

command -v npm >/dev/null 2>&1 || missing "npm (Node.js)"
npm_tools=$(grep -v '^#' tests/clients/npm-tools.txt | grep -v '^[[:space:]]*$' || true)
absent=""
for tool in $npm_tools; do
  npm ls --global --depth=0 "$tool" >/dev/null 2>&1 || absent="$absent $tool"
done
if [ -n "$absent" ]; then
  say "npm tools:$absent"
  # shellcheck disable=SC2086 # one word per tool
  npm install --global --no-audit --no-fund --loglevel=error $absent
fi

# The console test takes CHROMIUM and CHROMEDRIVER (paths) when set, else these names on PATH.
have_browser() {
  [ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 ||
    command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1
}
have_driver() { [ -n "${CHROMEDRIVER:-}" ] || command -v chromedriver >/dev/null 2>&1; }
if ! have_browser || ! have_driver; then
  say "chromium and chromedriver (Debian packages chromium, chromium-driver)"
  command -v apt-get >/dev/null 2>&1 ||
    missing "Chromium and chromedriver (on Debian/Ubuntu: apt-get install chromium chromium-driver; elsewhere your package manager's Chromium and chromedriver, or set CHROMIUM and CHROMEDRIVER to their paths)"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
say "ready"
