#!/usr/bin/env bash
# Replay soak of the real executable: an embedded broker holding tens of thousands of mixed events (the chaos soak's
# generator), then `campaign-pipeline replay --from beginning --group <one group>` run again and again until a run
# finishes, each run SIGKILLed, SIGTERMed, stalled past its lease's session (SIGSTOP, then SIGCONT), raced by a second
# replay of the same group, or left to finish, at random. Each run's exit status must be the one its fate calls for
# (137 killed, 1 interrupted, 75 lost or refused lease, 0 finished). Then one more run must find the range done,
# and the topics (read back with kcat) are checked against the contract as the chaos soak checks them: every event has
# a terminal outcome, never two different ones, none of an unknown event, per-recipient payload order, dead letters
# naming the field, and nothing on the live topics. Prints a summary; exits 1 on a violation, 2 when the soak itself
# could not run.
#
#   scripts/replay-soak.sh                # defaults: 40000 events on 12 partitions, seed from the clock
#   SOAK_EVENTS=60000 SOAK_PARTITIONS=18 SOAK_SEED=7 scripts/replay-soak.sh
#   SOAK_BIN=.build/release/campaign-pipeline scripts/replay-soak.sh
#
# Settings (environment): SOAK_EVENTS, SOAK_SEED, SOAK_RUNS (the most runs before the range must be done; 30),
# SOAK_DISRUPTIONS (how many runs first are all cut short, none raced or left to finish; 6), SOAK_MAX_DELAY (the
# most seconds from a run's holding its lease to its fate; 3, or 2 for a release build),
# SOAK_PARTITIONS (12; the embedded broker keeps about 5 MiB per partition), SOAK_BIN (the built executable;
# default: release if built, else debug), SOAK_DIR (work directory, kept; default a new one under /tmp). Needs kcat
# and python3. A run stalled past its session waits 14 s, and on the embedded broker a run after another waits up to
# 9 s for its lease (README, "The embedded broker"): a soak takes a few minutes.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd -P)
events=${SOAK_EVENTS:-40000}
seed=${SOAK_SEED:-$(date +%s)}
max_runs=${SOAK_RUNS:-30}
disruptions=${SOAK_DISRUPTIONS:-6}
partitions=${SOAK_PARTITIONS:-12}
soak_name=replay-soak
source "$root/scripts/soak-common.sh"
group="nightly-$seed-$RANDOM"
# How long after a run holds its lease its fate comes, at most: a release build replays the events in a few seconds.
if [[ $bin == */release/* ]]; then max_delay=${SOAK_MAX_DELAY:-2}; else max_delay=${SOAK_MAX_DELAY:-3}; fi
: > "$dir/problems.txt"
problem() { echo "$*" >> "$dir/problems.txt"; log "PROBLEM: $*"; }

log "work directory $dir, seed $seed, $events events, at most $max_runs runs, group $group, binary $bin"

# 1. The broker (it creates the pipeline's topics and the replay.* ones), the definitions, and the events.
soak_start_broker 1 "$partitions" campaign.sends campaign.definitions replay.push.fcm replay.push.apns replay.campaign.analytics replay.campaign.dlq
defined_at=$(soak_hour_ago)
soak_define_campaigns "$defined_at"
soak_define_late_campaign "$defined_at" "Before the sends of it."
# Over 4 s: the generator's late campaign is sent only in the second half of its time.
python3 "$helper" generate --count "$events" --seconds 4 --seed "$seed" --manifest "$dir/manifest.jsonl" \
    | kcat -b "$bootstrap" -t campaign.sends -P -K $'\t' -X linger.ms=5 2> "$dir/logs/producer.log" \
    || { log "could not write the events (see $dir/logs/producer.log)"; exit 2; }
log "produced $events events"

# 2. Runs of the replay in one group, until one finishes.
replay_args=(replay --bootstrap-servers "$bootstrap" --from beginning --group "$group" --log-level warning)
start_run() {  # slot name
    "$bin" "${replay_args[@]}" > "$dir/logs/$2.out" 2> "$dir/logs/$2.log" &
    pids[$1]=$!
    record start "$1" "${pids[$1]}"
}
# Waits for slot's run to hold its lease (it prints "Group:" then) or to end; returns 1 when it ended.
wait_for_lease() {  # slot name
    for _ in $(seq 900); do
        grep -q '^Group: ' "$dir/logs/$2.out" 2> /dev/null && return 0
        kill -0 "${pids[$1]}" 2> /dev/null || return 1
        sleep 0.1
    done
    problem "$2: neither held its lease nor ended within 90 s"
    return 0
}
# Waits for slot's run to end (at most 120 s, then it is killed as hung); sets `status` to its exit status.
finish_run() {  # slot name
    local pid=${pids[$1]}
    for _ in $(seq 1200); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2> /dev/null; then problem "$2: still running 120 s after its fate; killed"; kill -KILL "$pid"; fi
    wait "$pid" 2> /dev/null
    status=$?
    pids[$1]=
    record "exit-$status" "$1" "$pid"
}
# Checks a run's status against those its fate allows; a finished run (0) must say that it replayed the range.
expect_status() {  # name status allowed...
    local name=$1 status=$2
    shift 2
    local allowed
    for allowed in "$@"; do
        if [[ $status == "$allowed" ]]; then
            if [[ $status == 0 ]] && ! grep -q -E '^Replayed [0-9]+ records|has already replayed this whole range' "$dir/logs/$name.out"; then
                problem "$name: exit 0 without saying it replayed the range"
            fi
            return 0
        fi
    done
    problem "$name: exit $status, expected one of $* (see $dir/logs/$name.out and .log)"
}

# Whether run $1, which ended with status $2, had its lease group's join left unanswered: the embedded broker's
# coordinator can leave a join made as a killed holder's session ends, or as a raced holder leaves, unanswered (README,
# Replay and backfill). The replay says so, and running it again is the remedy; counted as such.
unanswered_join() {
    [[ $2 == 1 ]] && grep -q "lease group .* did not answer within" "$dir/logs/$1.log" || return 1
    fates[unanswered]=$(( ${fates[unanswered]:-0} + 1 ))
}

RANDOM=$seed
finished=0
declare -A fates=()
for run in $(seq 1 "$max_runs"); do
    name=run-$run
    start_run 1 "$name"
    if ! wait_for_lease 1 "$name"; then
        finish_run 1 "$name"
        log "$name ended before it held its lease: exit $status"
        unanswered_join "$name" "$status" && continue
        expect_status "$name" "$status" 0
        fates[early]=$(( ${fates[early]:-0} + 1 ))
        [[ $status == 0 ]] && { finished=1; break; }
        continue
    fi
    # The first runs are all cut short (killed, signalled or stalled); then a run may also be raced or finish.
    if (( run <= disruptions )); then roll=$(( RANDOM % 70 )); else roll=$(( RANDOM % 100 )); fi
    delay=$(awk -v r="$RANDOM" -v m="$max_delay" 'BEGIN { printf "%.1f", r / 32768 * m }')
    if (( roll < 30 )); then
        fate=SIGKILL
        sleep "$delay"; record SIGKILL 1 "${pids[1]}"; kill -KILL "${pids[1]}" 2> /dev/null
        finish_run 1 "$name"; expect_status "$name" "$status" 137 0
    elif (( roll < 55 )); then
        fate=SIGTERM
        sleep "$delay"; record SIGTERM 1 "${pids[1]}"; kill -TERM "${pids[1]}" 2> /dev/null
        finish_run 1 "$name"; expect_status "$name" "$status" 1 143 0
    elif (( roll < 70 )); then
        # Past the lease member's session (10 s): the coordinator drops it, and the run must stop with 75 once it
        # runs again, committing nothing more; or, when it had replayed its whole range before it was stopped, end as
        # a finished run (with a note of the loss).
        fate=SIGSTOP
        sleep "$delay"; record SIGSTOP 1 "${pids[1]}"; kill -STOP "${pids[1]}" 2> /dev/null
        if grep -q '^Replayed ' "$dir/logs/$name.out"; then allowed=0; else allowed=75; fi
        sleep 14
        record SIGCONT 1 "${pids[1]}"; kill -CONT "${pids[1]}" 2> /dev/null
        finish_run 1 "$name"
        # Stopped between the end of its range and its saying so: it says that it had replayed the whole range.
        if [[ $status == 0 ]] && grep -q 'had replayed its whole range by then' "$dir/logs/$name.log"; then allowed=0; fi
        expect_status "$name" "$status" "$allowed"
    elif (( roll < 82 )); then
        # A second replay of the group while the first runs: refused (75) unless the first finished first.
        fate=raced
        start_run 2 "$name-second"
        finish_run 2 "$name-second"; second=$status
        unanswered_join "$name-second" "$second" || expect_status "$name-second" "$second" 75 0
        if [[ $second == 75 ]] && ! grep -q 'another replay is running in --group' "$dir/logs/$name-second.log"; then
            problem "$name-second: exit 75 without saying another replay runs in the group"
        fi
        # The embedded broker's coordinator can drop the holder's member in the rebalance the second's join makes (it
        # credits no heartbeat it answers with an error; see ReplayLeaseTests): the first then stops as a lost lease.
        finish_run 1 "$name"; expect_status "$name" "$status" 0 75
        if [[ $status == 75 ]]; then fates[raced-holder-dropped]=$(( ${fates[raced-holder-dropped]:-0} + 1 )); fi
    else
        fate=finish
        finish_run 1 "$name"; expect_status "$name" "$status" 0
    fi
    fates[$fate]=$(( ${fates[$fate]:-0} + 1 ))
    log "$name: $fate, exit $status"
    [[ $status == 0 ]] && { finished=1; break; }
done
(( finished )) || problem "no run finished the range in $max_runs runs"

# 3. Once more: the group's progress is the range's end.
start_run 1 again
finish_run 1 again
expect_status again "$status" 0
grep -q 'has already replayed this whole range' "$dir/logs/again.out" || problem "a run after the finished one did not find the range done (see $dir/logs/again.out)"
final_end=$(now)

# 4. Read the topics back with kcat and check them; the live topics must hold nothing.
soak_dump_topics sends:campaign.sends analytics:replay.campaign.analytics fcm:replay.push.fcm apns:replay.push.apns dlq:replay.campaign.dlq
for topic in push.fcm push.apns campaign.analytics campaign.dlq campaign.timers; do
    count=$(kcat -b "$bootstrap" -C -t "$topic" -o beginning -e -q 2>> "$dir/logs/kcat.log" | wc -l)
    (( count == 0 )) || problem "the live topic $topic holds $count records"
done
python3 "$helper" check --replay --dir "$dir/topics" --manifest "$dir/manifest.jsonl" --chaos-log "$chaos_log" --final-end "$final_end"
result=$?
echo "  runs: $(for fate in "${!fates[@]}"; do printf '%s %s, ' "$fate" "${fates[$fate]}"; done | sed 's/, $//')"
soak_finish "$result" "runs that ended otherwise than their fate calls for"
