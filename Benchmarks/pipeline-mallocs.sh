#!/bin/bash
# Mallocs per event of the pipeline run of `campaign-pipeline bench`, in its steady state: a perf uprobe on the
# malloc the executable uses (jemalloc's when it links it, as it does on Linux; otherwise glibc's) counts every call of the benchmark process for 14 s (seven progress lines) while the pipeline runs, and the
# events are read from the progress lines at both ends of that window. Everything in the process counts: the
# pipeline, our Kafka layer, librdkafka and the feeder (the broker runs in a child process and does not).
#
#   Benchmarks/pipeline-mallocs.sh [events]        # from the repository root; needs perf and root (uprobes)
#
# The executable is built with `swift build -c release --product campaign-pipeline --scratch-path .build-release`.
set -euo pipefail
events=${1:-500000}
binary=.build-release/release/campaign-pipeline
library=$(ldd "$binary" | awk '/libjemalloc/ {print $3; exit}')
[ -n "$library" ] || library=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
# One probe at the address of the exported `malloc` (a probe by name also lands on the library's own malloc@plt).
address=$(nm -D "$library" | awk '$3 == "malloc" {print $1}')
group=probe_$(basename "$library" | sed 's/\.so.*//; s/[^A-Za-z0-9_]/_/g')
event=$group:pipeline_malloc
perf probe -q -l "$event" 2>/dev/null | grep -q pipeline_malloc || perf probe -q -x "$library" -a "pipeline_malloc=0x$address"
out=$(mktemp)
"$binary" bench --events "$events" > "$out" 2>&1 &
bench=$!
trap 'kill $bench 2>/dev/null || true; rm -f "$out" "$out.stat"' EXIT
lines() { grep -c "pipeline:" "$out" || true; }
until grep -q "pipeline: [1-9]" "$out"; do sleep 0.1; done
sleep 2
n=$(lines)
while [ "$(lines)" -eq "$n" ]; do sleep 0.02; done
n=$(lines)
first=$(grep "pipeline:" "$out" | sed -n "${n}p" | sed 's/.*: \([0-9]*\)\/.*/\1/')
perf stat -e "$event" -p "$bench" -x, -o "$out.stat" -- sleep 13.9
until [ "$(lines)" -ge $((n + 7)) ]; do sleep 0.02; done
last=$(grep "pipeline:" "$out" | sed -n "$((n + 7))p" | sed 's/.*: \([0-9]*\)\/.*/\1/')
mallocs=$(grep "${event#*:}" "$out.stat" | cut -d, -f1)
wait $bench || true
echo "events $first -> $last, mallocs $mallocs, per event: $(( mallocs / (last - first) ))"
