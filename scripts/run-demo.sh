#!/usr/bin/env bash
# `make run`: start the embedded broker, then show the pipeline's pieces working on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.build/debug/campaign-pipeline

log=$(mktemp)
"$bin" broker --brokers 1 --partitions 6 >"$log.out" 2>"$log" &
broker=$!
trap 'kill -INT $broker 2>/dev/null; wait $broker 2>/dev/null; rm -f "$log" "$log.out"' EXIT
for _ in $(seq 50); do [ -s "$log.out" ] && break; sleep 0.1; done
bootstrap=$(head -1 "$log.out")
echo "Embedded broker: $bootstrap"
echo
echo "Rendering the sample events (Config/samples):"
"$bin" render Config/samples/*.json
echo
echo "Topics on the embedded broker:"
kcat -L -b "$bootstrap" 2>/dev/null | grep topic || true
