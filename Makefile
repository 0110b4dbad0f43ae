# The tests, from a fresh machine (the README's test command; .ci/run calls exactly it after its
# fmt, clippy and unused-dependency gates): tests/setup.sh installs the test tools that are
# missing (Python, npm, Chromium), then tests/run.sh runs every test of the workspace (what
# `cargo test --workspace` runs, in three lanes: the S3 store binary, which mostly waits, beside
# two lanes that keep both cores busy).
#
#   make test
#   make flake-hunt RUNS=5      # the test command RUNS times, and the concurrency-heavy
#                               # binaries on one core and beside syncing writers; a report
#                               # of every failure by test name
test:
	bash tests/setup.sh
	bash tests/run.sh

flake-hunt:
	bash tests/flake-hunt.sh $(RUNS)

# SAM build of the five Lambda functions in one compile (template.yaml: BuildMethod: makefile).
#
# `sam build` runs `make build-<LogicalId>` once per function with ARTIFACTS_DIR set. Every
# target runs the same cargo-lambda build of all five binaries (arm64, profile
# `release-lambda` of Cargo.toml), so the first one compiles the dependency graph once and the
# other four find everything up to date; each then copies its own bootstrap. Needs
# cargo-lambda (which brings zig, to link against the glibc of provided.al2023) and the
# aarch64-unknown-linux-gnu Rust target; see docs/deploy.md.
#
#   make lambdas        # just the build: target/lambda/<function>/bootstrap

FUNCTIONS := legacy usage billing revenue admin
PROFILE := release-lambda
LAMBDA_DIR := target/lambda

.DEFAULT_GOAL := lambdas
.PHONY: test flake-hunt lambdas build-LegacyFunction build-UsageFunction build-BillingFunction \
	build-RevenueFunction build-AdminFunction

# -p per function (not --bin): features are then unified over these five packages only, so
# the local server's extras (shared/aws-sso) and the tests' stay out of the binaries.
lambdas:
	cargo lambda build --profile $(PROFILE) --arm64 --lambda-dir $(LAMBDA_DIR) $(addprefix -p ,$(FUNCTIONS))

build-LegacyFunction: lambdas
	cp $(LAMBDA_DIR)/legacy/bootstrap "$(ARTIFACTS_DIR)/bootstrap"
build-UsageFunction: lambdas
	cp $(LAMBDA_DIR)/usage/bootstrap "$(ARTIFACTS_DIR)/bootstrap"
build-BillingFunction: lambdas
	cp $(LAMBDA_DIR)/billing/bootstrap "$(ARTIFACTS_DIR)/bootstrap"
build-RevenueFunction: lambdas
	cp $(LAMBDA_DIR)/revenue/bootstrap "$(ARTIFACTS_DIR)/bootstrap"
build-AdminFunction: lambdas
	cp $(LAMBDA_DIR)/admin/bootstrap "$(ARTIFACTS_DIR)/bootstrap"
