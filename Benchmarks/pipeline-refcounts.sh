#!/bin/bash
# Reference-count operations per event of the pipeline run of `campaign-pipeline bench`, in its steady state: perf
# uprobes on the Swift runtime's `swift_retain` and `swift_release` count every call of the benchmark process for 14 s
# (seven progress lines) while the pipeline runs, and the events are read from the progress lines at both ends of that
# window. Everything in the process counts: the pipeline, our Kafka layer and the feeder (the broker runs in a child
# process and does not). The calls the runtime makes under other names (`swift_bridgeObjectRetain`, `swift_retain_n`,
# ...) are not counted, and a call on a value that needs no count (a small string) is counted like the others.
#
# Samples show these calls' cost in the instruction after the atomic operation and after the load of the count: on
# this machine they cost what their cache misses cost, most of them on objects other threads touch. The events/s figure
# is too noisy to show a change of a few percent; this count moves by a few percent between runs (batch sizes differ).
#
#   Benchmarks/pipeline-refcounts.sh [events]       # from the repository root; needs perf and root (uprobes)
#
# The executable is built with `swift build -c release --product campaign-pipeline --scratch-path .build-release`
# (`BINARY=path` measures another build, to compare two revisions). The window is `pipeline-window.sh`'s.
set -euo pipefail
source "$(dirname "$0")/pipeline-window.sh"
events=${1:-500000}
binary=${BINARY:-.build-release/release/campaign-pipeline}
library=$(ldd "$binary" | awk '/libswiftCore/ {print $3; exit}')
[ -n "$library" ] || { echo "error: $binary does not link libswiftCore dynamically" >&2; exit 1; }
group=probe_$(basename "$library" | sed 's/\.so.*//; s/[^A-Za-z0-9_]/_/g')
for function in swift_retain swift_release; do
    perf probe -q -l "$group:pipeline_$function" 2>/dev/null | grep -q "pipeline_$function" \
        || perf probe -q -x "$library" -a "pipeline_$function=$function"
done
count_pipeline_window "$events" "$group:pipeline_swift_retain" "$group:pipeline_swift_release"
retains=$(grep "pipeline_swift_retain" <<< "$window_stat" | cut -d, -f1)
releases=$(grep "pipeline_swift_release" <<< "$window_stat" | cut -d, -f1)
count=$((window_last - window_first))
echo "events $window_first -> $window_last, retains $retains ($((retains / count)) per event), releases $releases ($((releases / count)) per event)"
