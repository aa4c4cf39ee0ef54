#!/bin/bash
# Where the pipeline run of `campaign-pipeline bench` spends its CPU, by thread and by function: perf samples the
# benchmark process (1,999 Hz, no call graphs) for a few seconds of the pipeline run's steady state, then prints each
# thread's share of the samples and the functions that took the most of them.
#
#   Benchmarks/pipeline-profile.sh [events] [seconds]     # from the repository root; needs perf and root
#
# Debian's librdkafka has only its exported symbols, so its threads' samples are mostly unnamed. To name them, build
# the same librdkafka version with its symbols (only for profiling) and point LIBRDKAFKA_SYMBOLS at its `src`:
#
#   curl -sO http://deb.debian.org/debian/pool/main/libr/librdkafka/librdkafka_2.0.2.orig.tar.gz
#   tar xzf librdkafka_2.0.2.orig.tar.gz && cd librdkafka-2.0.2
#   ./configure --disable-ssl --disable-gssapi --disable-zstd --disable-curl && make -C src -j2 librdkafka.so.1
#   LIBRDKAFKA_SYMBOLS=$PWD/src Benchmarks/pipeline-profile.sh      # back in the repository
#
# The executable is built with `swift build -c release --product campaign-pipeline --scratch-path .build-release`.
set -euo pipefail
events=${1:-400000}
seconds=${2:-4}
binary=.build-release/release/campaign-pipeline
out=$(mktemp)
data=$(mktemp)
if [ -n "${LIBRDKAFKA_SYMBOLS:-}" ]; then export LD_LIBRARY_PATH="$LIBRDKAFKA_SYMBOLS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
"$binary" bench --events "$events" > "$out" 2>&1 &
bench=$!
trap 'kill $bench 2>/dev/null || true; rm -f "$out" "$data" "$data.old"' EXIT
until grep -q "pipeline: [1-9]" "$out"; do
    kill -0 $bench 2>/dev/null || { cat "$out"; exit 1; }
    sleep 0.1
done
sleep 1
perf record -q -F 1999 -p "$bench" -o "$data" -- sleep "$seconds" > /dev/null 2>&1
wait $bench || true
grep -E "^(relay|pipeline) " "$out"
echo
echo "Share of the samples by thread (thread id:name; librdkafka names its threads rdk:*, the others are Swift's and the poll threads):"
perf report -i "$data" --no-children --sort pid --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -10
echo
echo "Functions with the most samples (thread, library, function):"
perf report -i "$data" --no-children --sort pid,dso,sym --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -40 | cut -c1-160
