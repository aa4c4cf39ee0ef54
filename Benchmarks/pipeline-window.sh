# Sourced by pipeline-mallocs.sh and pipeline-refcounts.sh, not run: counts perf events of the `campaign-pipeline
# bench` process over seven progress lines (14 s) of the pipeline run's steady state.
#
#   count_pipeline_window EVENTS PERF_EVENT...
#
# Runs ${BINARY:-.build-release/release/campaign-pipeline}. Sets `window_first` and `window_last` (the events processed
# at both ends of the window, read from the progress lines) and `window_stat` (perf stat's CSV output: a line per perf
# event, its count first).
count_pipeline_window() {
    local events=$1
    shift
    local binary=${BINARY:-.build-release/release/campaign-pipeline}
    local out
    out=$(mktemp)
    "$binary" bench --events "$events" > "$out" 2>&1 &
    local bench=$!
    # shellcheck disable=SC2064 # expanded now: the trap runs after the function's locals are gone
    trap "kill $bench 2>/dev/null || true; rm -f '$out' '$out.stat'" EXIT
    lines() { grep -c "pipeline:" "$out" || true; }
    progress() { grep "pipeline:" "$out" | sed -n "${1}p" | sed 's/.*: \([0-9]*\)\/.*/\1/'; }
    until grep -q "pipeline: [1-9]" "$out"; do sleep 0.1; done
    sleep 2
    local n
    n=$(lines)
    while [ "$(lines)" -eq "$n" ]; do sleep 0.02; done
    n=$(lines)
    window_first=$(progress "$n")
    local probes=()
    for event in "$@"; do probes+=(-e "$event"); done
    perf stat "${probes[@]}" -p "$bench" -x, -o "$out.stat" -- sleep 13.9
    until [ "$(lines)" -ge $((n + 7)) ]; do sleep 0.02; done
    window_last=$(progress $((n + 7)))
    window_stat=$(cat "$out.stat")
    wait $bench || true
}
