#!/usr/bin/env bash
# The benchmarks as a smoke test, never a timed one (`make test` runs this after the tests). The nested Benchmarks
# package builds without warnings in its own code; the render suite runs its average-event benchmark (it first checks
# that every benchmark event renders with no issue and no warning, and fails otherwise); the two profiling loops run a
# few iterations. No figure is compared with anything: this machine's timings are too noisy to gate on.
#   scripts/bench-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/../Benchmarks"
mkdir -p .build
log=.build/bench-smoke.log
swift package --disable-sandbox benchmark --target RenderBenchmarks --filter 'render mixed.*' --no-progress 2>&1 | tee "$log"
swift build -c release --product RenderProfile 2>&1 | tee -a "$log"
swift build -c release --product OutcomeProfile 2>&1 | tee -a "$log"
root="$(cd .. && pwd)"
if grep -E "^(${root}/)?Benchmarks/(Sources|Benchmarks)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u; then
    echo "error: the benchmarks' build shows warnings in our code (above); fix them" >&2
    exit 1
fi
.build/release/RenderProfile 600
.build/release/OutcomeProfile 300
