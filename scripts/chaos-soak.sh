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
soak_name=chaos-soak
source "$root/scripts/soak-common.sh"
group="soak-$seed-$RANDOM"
declare -a runs=()

log "work directory $dir, seed $seed, $events events over ${seconds}s, $instances instances, binary $bin"

# 1. The broker (it creates the pipeline's topics) and the definitions.
soak_start_broker "$brokers" "$partitions" campaign.sends campaign.definitions push.fcm push.apns campaign.analytics campaign.dlq campaign.timers
soak_define_campaigns "$(soak_hour_ago)"

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
    soak_define_late_campaign "$(python3 -c 'import datetime; print((datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))')" "While the soak ran."
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
soak_dump_topics sends:campaign.sends analytics:campaign.analytics fcm:push.fcm apns:push.apns dlq:campaign.dlq timers:campaign.timers
python3 "$helper" check --dir "$dir/topics" --manifest "$dir/manifest.jsonl" --chaos-log "$chaos_log" --final-end "$final_end"
soak_finish $? "instances that died, hung or failed to stop cleanly"
