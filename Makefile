# The two commands a fresh machine needs:
#   make run    build, start the embedded broker, load the sample events, run the pipeline until idle, summarize
#   make test   build (no warnings allowed in our code), run every test, then the benchmarks as a smoke test
# Both install the system packages they need (librdkafka-dev, libjemalloc-dev, pkg-config; kcat for the tests) when
# missing (scripts/ensure-deps.sh).
# Also: make broker (an embedded broker with the pipeline's topics, until Ctrl-C; it prints its bootstrap address),
# make build, make clean.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
SWIFT ?= swift
BUILD_LOG := .build/build.log
# How many tests Swift Testing runs at once. Unbounded, it starts all ~600 at once, and on two cores the run's first
# minute starved the timeouts of tests that had done nothing wrong (see the README's Development). The test binary
# sets eight per core itself as it loads (Tests/TestRunWidth), so `swift test` alone does too; `make test
# TEST_WIDTH=8` overrides it.
TEST_WIDTH ?=

.PHONY: run test build deps test-deps broker clean

deps:
	@scripts/ensure-deps.sh

test-deps:
	@scripts/ensure-deps.sh test

build: deps
	@mkdir -p .build
	$(SWIFT) build 2>&1 | tee $(BUILD_LOG)
	@scripts/check-warnings.sh $(BUILD_LOG)

run: build
	$(SWIFT) run --skip-build campaign-pipeline demo

broker: build
	$(SWIFT) run --skip-build campaign-pipeline broker

test: test-deps
	@mkdir -p .build
	$(SWIFT) build --build-tests 2>&1 | tee $(BUILD_LOG)
	@scripts/check-warnings.sh $(BUILD_LOG)
	$(if $(TEST_WIDTH),SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) )$(SWIFT) test --skip-build
	@scripts/bench-smoke.sh

clean:
	rm -rf .build
