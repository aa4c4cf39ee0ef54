#!/bin/bash
# Mallocs per event of the pipeline run of `campaign-pipeline bench`, in its steady state: a perf uprobe on the
# malloc the executable uses (jemalloc's when it links it, as it does on Linux; otherwise glibc's) counts every call of the benchmark process for 14 s (seven progress lines) while the pipeline runs, and the
# events are read from the progress lines at both ends of that window. Everything in the process counts: the
# pipeline, our Kafka layer, librdkafka and the feeder (the broker runs in a child process and does not).
#
#   Benchmarks/pipeline-mallocs.sh [events]        # from the repository root; needs perf and root (uprobes)
#
# The executable is built with `swift build -c release --product campaign-pipeline --scratch-path .build-release`
# (`BINARY=path` measures another build). The window is `pipeline-window.sh`'s.
set -euo pipefail
source "$(dirname "$0")/pipeline-window.sh"
events=${1:-500000}
library=$(ldd "${BINARY:-.build-release/release/campaign-pipeline}" | awk '/libjemalloc/ {print $3; exit}')
[ -n "$library" ] || library=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
# One probe at the address of the exported `malloc` (a probe by name also lands on the library's own malloc@plt).
address=$(nm -D "$library" | awk '$3 == "malloc" {print $1}')
group=probe_$(basename "$library" | sed 's/\.so.*//; s/[^A-Za-z0-9_]/_/g')
event=$group:pipeline_malloc
perf probe -q -l "$event" 2>/dev/null | grep -q pipeline_malloc || perf probe -q -x "$library" -a "pipeline_malloc=0x$address"
count_pipeline_window "$events" "$event"
mallocs=$(grep "${event#*:}" <<< "$window_stat" | cut -d, -f1)
echo "events $window_first -> $window_last, mallocs $mallocs, per event: $(( mallocs / (window_last - window_first) ))"
