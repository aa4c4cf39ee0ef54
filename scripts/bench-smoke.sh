#!/usr/bin/env bash
# The benchmarks as a smoke test, never a timed one (`make test` runs this after the tests). The nested Benchmarks
# package's render suite and its profiling loop build without warnings in their code; the suite runs its average-event
# benchmark (it first checks that every benchmark event renders with no issue and no warning, and fails otherwise);
# the profiling loop runs a few iterations. No figure is compared with anything: this machine's timings are too noisy
# to gate on. OutcomeProfile is left out: it links the whole pipeline runtime (SwiftNIO, the HTTP client, crypto),
# whose release build from a fresh clone took 4.5 of the 13.8 minutes CI took with it.
#   scripts/bench-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"
mkdir -p .build
log=.build/bench-smoke.log
swift package --disable-sandbox benchmark --target RenderBenchmarks --filter 'render mixed.*' --no-progress 2>&1 | tee "$log"
swift build -c release --product RenderProfile 2>&1 | tee -a "$log"
../scripts/check-warnings.sh "$log"
.build/release/RenderProfile 600
