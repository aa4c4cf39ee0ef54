#!/usr/bin/env bash
# Chaos soak of the real executables: an embedded broker, three `campaign-pipeline run` instances in one consumer
# group, a few thousand mixed events produced with kcat over about a minute while instances are SIGKILLed,
# SIGTERMed and restarted, or stalled (SIGSTOP past the session timeout, then SIGCONT) at random, then a final
# instance run until idle, then a check of the topics (read back with kcat) against the contract: every event has a
# terminal outcome, never two different ones, no outcome of an unknown event, timer expiries after their delivery and
# at most once (a crash may repeat one), per-recipient payload order, dead letters naming the field. Prints a summary; exits 1 on a violation, 2 when the soak itself could not run.
#
#   scripts/chaos-soak.sh                         # defaults: 3000 events over 60 s, seed from the clock
#   SOAK_EVENTS=5000 SOAK_SECONDS=90 SOAK_SEED=7 scripts/chaos-soak.sh
#   SOAK_BIN=.build/release/campaign-pipeline scripts/chaos-soak.sh
#
# Settings (environment): SOAK_EVENTS, SOAK_SECONDS (production time), SOAK_SEED, SOAK_INSTANCES (3), SOAK_BIN (the
# built executable; default: release if built, else debug), SOAK_DIR (work directory, kept; default a new one under
# /tmp), SOAK_BROKERS (3), SOAK_PARTITIONS (6), SOAK_ASSIGNMENT (librdkafka partition.assignment.strategy, default
# range,roundrobin; cooperative-sticky tries incremental rebalancing), SOAK_SKIP_KINDS (kinds of event not to
# generate, comma-separated, e.g. ttl-soon; see KINDS in scripts/chaos_soak.py), SOAK_STALLS (percent of the chaos
# actions that stall an instance instead of stopping it; 20). Needs kcat and python3.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd -P)
events=${SOAK_EVENTS:-3000}
seconds=${SOAK_SECONDS:-60}
seed=${SOAK_SEED:-$(date +%s)}
instances=${SOAK_INSTANCES:-3}
brokers=${SOAK_BROKERS:-3}
partitions=${SOAK_PARTITIONS:-6}
assignment=${SOAK_ASSIGNMENT:-range,roundrobin}
stalls=${SOAK_STALLS:-20}
bin=${SOAK_BIN:-}
if [[ -z $bin ]]; then
    if [[ -x $root/.build/release/campaign-pipeline ]]; then bin=$root/.build/release/campaign-pipeline; else bin=$root/.build/debug/campaign-pipeline; fi
fi
[[ -x $bin ]] || { echo "chaos-soak: no executable at $bin; build it first: swift build --product campaign-pipeline" >&2; exit 2; }
command -v kcat > /dev/null || { echo "chaos-soak: kcat is not installed (apt-get install kcat)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "chaos-soak: python3 is not installed" >&2; exit 2; }
dir=${SOAK_DIR:-$(mktemp -d /tmp/chaos-soak.XXXXXX)}
mkdir -p "$dir/logs" "$dir/topics"
group="soak-$seed-$RANDOM"
chaos_log=$dir/chaos.jsonl
: > "$chaos_log"
helper=$root/scripts/chaos_soak.py

log() { printf '%s chaos-soak: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
record() { printf '{"at": %s, "action": "%s", "slot": %s, "pid": %s}\n' "$(now)" "$1" "$2" "${3:-0}" >> "$chaos_log"; }

broker_pid=
declare -a pids=()
declare -a runs=()
cleanup() {
    for pid in "${pids[@]}"; do [[ -n $pid ]] && kill -KILL "$pid" 2> /dev/null; done
    [[ -n $broker_pid ]] && kill -TERM "$broker_pid" 2> /dev/null && wait "$broker_pid" 2> /dev/null
}
trap cleanup EXIT

log "work directory $dir, seed $seed, $events events over ${seconds}s, $instances instances, binary $bin"

# 1. The broker (it creates the pipeline's topics) and the definitions.
"$bin" broker --brokers "$brokers" --partitions "$partitions" > "$dir/broker.out" 2> "$dir/logs/broker.log" &
broker_pid=$!
for _ in $(seq 100); do [[ -s $dir/broker.out ]] && break; sleep 0.1; done
bootstrap=$(head -1 "$dir/broker.out")
[[ -n $bootstrap ]] || { log "the broker did not start (see $dir/logs/broker.log)"; exit 2; }
kcat -b "$bootstrap" -L > "$dir/metadata.txt" 2>&1
for topic in campaign.sends campaign.definitions push.fcm push.apns campaign.analytics campaign.dlq campaign.timers; do
    grep -q "topic \"$topic\" with $partitions partitions" "$dir/metadata.txt" || { log "topic $topic missing on the broker"; exit 2; }
done
log "broker at $bootstrap"
defined_at=$(python3 -c 'import datetime; print((datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))')
{
    printf 'soak-stored\t{"type":"campaign.defined","campaignId":"soak-stored","version":1,"template":"basic","occurredAt":"%s","content":{"title":"Stored, {{firstName}}!","body":"From the campaign table."}}\n' "$defined_at"
    printf 'soak-cancelled\t{"type":"campaign.defined","campaignId":"soak-cancelled","version":1,"template":"basic","occurredAt":"%s","content":{"title":"Cancelled","body":"Never sent."}}\n' "$defined_at"
    printf 'soak-cancelled\t{"type":"campaign.cancelled","campaignId":"soak-cancelled","occurredAt":"%s"}\n' "$defined_at"
} | kcat -b "$bootstrap" -t campaign.definitions -P -K $'\t' || { log "could not write the definitions"; exit 2; }

cat > "$dir/pipeline.json" << EOF
{
  "kafka": {
    "bootstrapServers": "$bootstrap",
    "groupId": "$group",
    "consumerProperties": { "session.timeout.ms": "6000", "heartbeat.interval.ms": "500", "partition.assignment.strategy": "$assignment" }
  },
  "processing": { "drainTimeoutSeconds": 10 }
}
EOF

# 2. The instances.
start_instance() {
    local slot=$1 run=$(( ${runs[$1]:-0} + 1 ))
    runs[$slot]=$run
    "$bin" run --config "$dir/pipeline.json" --log-level info > "$dir/logs/instance-$slot-run-$run.out" 2> "$dir/logs/instance-$slot-run-$run.log" &
    pids[$slot]=$!
    record start "$slot" "${pids[$slot]}"
}
stop_instance() {  # slot signal
    local slot=$1 signal=$2 pid=${pids[$1]}
    [[ -n $pid ]] || return 0
    record "$signal" "$slot" "$pid"
    kill "-${signal#SIG}" "$pid" 2> /dev/null
    if [[ $signal == SIGTERM ]]; then
        # A graceful stop drains (at most drainTimeoutSeconds) and commits; after 30 s it counts as hung.
        for _ in $(seq 300); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2> /dev/null; then log "instance $slot (pid $pid) did not stop 30 s after SIGTERM; killing it"; echo "hung $slot $pid" >> "$dir/problems.txt"; kill -KILL "$pid"; fi
    fi
    wait "$pid" 2> /dev/null
    local status=$?
    if [[ $signal == SIGTERM && $status -ne 0 ]]; then echo "exit $slot $pid $status" >> "$dir/problems.txt"; log "instance $slot (pid $pid) exited $status after SIGTERM"; fi
    pids[$slot]=
}
for slot in $(seq 1 "$instances"); do start_instance "$slot"; done
log "started $instances instances in group $group"

# 3. Produce while the chaos runs.
python3 "$helper" generate --count "$events" --seconds "$seconds" --seed "$seed" --manifest "$dir/manifest.jsonl" --skip-kinds "${SOAK_SKIP_KINDS:-}" \
    | kcat -b "$bootstrap" -t campaign.sends -P -K $'\t' -X linger.ms=5 2> "$dir/logs/producer.log" &
producer_pid=$!
# Halfway through, a campaign is defined; the generator's sends of it follow (they render its stored content).
(
    sleep "$(python3 -c "print($seconds / 2)")"
    printf 'soak-late\t{"type":"campaign.defined","campaignId":"soak-late","version":1,"template":"carousel","occurredAt":"%s","content":{"title":"Defined late","body":"While the soak ran.","items":[{"image":"https://example.com/1.png","text":"1","uri":"https://example.com/1"},{"image":"https://example.com/2.png","text":"2","uri":"https://example.com/2"},{"image":"https://example.com/3.png","text":"3","uri":"https://example.com/3"}]}}\n' \
        "$(python3 -c 'import datetime; print((datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))')" \
        | kcat -b "$bootstrap" -t campaign.definitions -P -K $'\t'
) &
RANDOM=$seed
chaos_end=$(( SECONDS + ${seconds%.*} + 5 ))
while (( SECONDS < chaos_end )); do
    # Long enough apart for the group to settle (a join takes 3 s or more) and process in between.
    sleep "$(( RANDOM % 6 + 5 )).$(( RANDOM % 10 ))"
    slot=$(( RANDOM % instances + 1 ))
    # Revive instances that died by themselves (a crash is a finding: their logs say why).
    for other in $(seq 1 "$instances"); do
        pid=${pids[$other]:-}
        if [[ -n $pid ]] && ! kill -0 "$pid" 2> /dev/null; then
            wait "$pid"; status=$?
            log "instance $other (pid $pid) died by itself with status $status"; echo "died $other $pid $status" >> "$dir/problems.txt"
            record died "$other" "$pid"; pids[$other]=; start_instance "$other"
        fi
    done
    roll=$(( RANDOM % 100 ))
    if (( roll < stalls )); then
        # A stall (a long GC pause, a frozen VM): longer than the session timeout, so the group moves the
        # instance's partitions away while it cannot notice; then it goes on where it stopped.
        pid=${pids[$slot]}
        log "SIGSTOP instance $slot (pid $pid) for 9 s"
        record SIGSTOP "$slot" "$pid"
        kill -STOP "$pid" 2> /dev/null
        sleep 9
        record SIGCONT "$slot" "$pid"
        kill -CONT "$pid" 2> /dev/null
        continue
    fi
    if (( roll < stalls + (100 - stalls) * 6 / 10 )); then signal=SIGKILL; else signal=SIGTERM; fi
    log "$signal instance $slot (pid ${pids[$slot]})"
    stop_instance "$slot" "$signal"
    sleep "$(( RANDOM % 3 )).$(( RANDOM % 10 ))"
    start_instance "$slot"
done
wait "$producer_pid" || { log "the producer failed (see $dir/logs/producer.log)"; exit 2; }
log "produced $events events; stopping the instances"
for slot in $(seq 1 "$instances"); do stop_instance "$slot" SIGTERM; done

# 4. A final instance, alone, until idle (long enough for the short timers to come due and fire).
log "final instance until idle"
record final 0 0
timeout 300 "$bin" run --config "$dir/pipeline.json" --log-level info --until-idle 25 > "$dir/logs/final.out" 2> "$dir/logs/final.log"
status=$?
final_end=$(now)
record final-end 0 0
(( status == 0 )) || { log "the final instance exited $status (see $dir/logs/final.log)"; echo "final $status" >> "$dir/problems.txt"; }

# 5. Read the topics back with kcat and check them.
for pair in sends:campaign.sends analytics:campaign.analytics fcm:push.fcm apns:push.apns dlq:campaign.dlq timers:campaign.timers; do
    kcat -b "$bootstrap" -C -t "${pair#*:}" -o beginning -e -J -q > "$dir/topics/${pair%%:*}.jsonl" 2>> "$dir/logs/kcat.log" \
        || { log "kcat could not read ${pair#*:}"; exit 2; }
done
python3 "$helper" check --dir "$dir/topics" --manifest "$dir/manifest.jsonl" --chaos-log "$chaos_log" --final-end "$final_end"
result=$?
if [[ -s $dir/problems.txt ]]; then
    echo "  FAIL process: instances that died, hung or failed to stop cleanly:"
    sed 's/^/       /' "$dir/problems.txt"
    result=1
fi
grep -l -E "Fatal error|Assertion failed|Precondition failed|Segmentation" "$dir"/logs/*.log 2> /dev/null | sed 's/^/  crash log: /'
log "logs and topic dumps in $dir"
exit "$result"
