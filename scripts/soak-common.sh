# What scripts/chaos-soak.sh and scripts/replay-soak.sh share; sourced by them, not run. Before sourcing, set `root`
# (the repository) and `soak_name` (the script's name, for its messages and work directory). It checks the tools,
# picks the executable (`bin`: SOAK_BIN, else the release build if there is one, else the debug build) and the work
# directory (`dir`: SOAK_DIR, else a new one under /tmp, with logs/ and topics/), and defines the helpers below. A
# pid in the `pids` array and the broker are killed when the script exits.

bin=${SOAK_BIN:-}
if [[ -z $bin ]]; then
    if [[ -x $root/.build/release/campaign-pipeline ]]; then bin=$root/.build/release/campaign-pipeline; else bin=$root/.build/debug/campaign-pipeline; fi
fi
[[ -x $bin ]] || { echo "$soak_name: no executable at $bin; build it first: swift build --product campaign-pipeline" >&2; exit 2; }
command -v kcat > /dev/null || { echo "$soak_name: kcat is not installed (apt-get install kcat)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "$soak_name: python3 is not installed" >&2; exit 2; }
dir=${SOAK_DIR:-$(mktemp -d "/tmp/$soak_name.XXXXXX")}
mkdir -p "$dir/logs" "$dir/topics"
chaos_log=$dir/chaos.jsonl
: > "$chaos_log"
helper=$root/scripts/chaos_soak.py

log() { printf '%s %s: %s\n' "$(date +%H:%M:%S)" "$soak_name" "$*" >&2; }
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
# Adds an action to the chaos log (the checker reads the SIGKILLs from it): action, slot, pid.
record() { printf '{"at": %s, "action": "%s", "slot": %s, "pid": %s}\n' "$(now)" "$1" "$2" "${3:-0}" >> "$chaos_log"; }

broker_pid=
declare -a pids=()
soak_cleanup() {
    for pid in "${pids[@]}"; do [[ -n $pid ]] && kill -KILL "$pid" 2> /dev/null; done
    [[ -n $broker_pid ]] && kill -TERM "$broker_pid" 2> /dev/null && wait "$broker_pid" 2> /dev/null
}
trap soak_cleanup EXIT

# Starts `campaign-pipeline broker` with `brokers` brokers and `partitions` partitions per topic, sets `bootstrap`,
# and checks that each topic named after them was created with that many partitions; exits 2 otherwise.
soak_start_broker() {  # brokers partitions topic...
    local brokers=$1 partitions=$2 topic
    shift 2
    "$bin" broker --brokers "$brokers" --partitions "$partitions" > "$dir/broker.out" 2> "$dir/logs/broker.log" &
    broker_pid=$!
    for _ in $(seq 100); do [[ -s $dir/broker.out ]] && break; sleep 0.1; done
    bootstrap=$(head -1 "$dir/broker.out")
    [[ -n $bootstrap ]] || { log "the broker did not start (see $dir/logs/broker.log)"; exit 2; }
    kcat -b "$bootstrap" -L > "$dir/metadata.txt" 2>&1
    for topic in "$@"; do
        grep -q "topic \"$topic\" with $partitions partitions" "$dir/metadata.txt" || { log "topic $topic missing on the broker"; exit 2; }
    done
    log "broker at $bootstrap"
}

# The time an hour ago, as the campaigns' definitions give it.
soak_hour_ago() {
    python3 -c 'import datetime; print((datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))'
}

# Writes a campaign definition to the definitions topic: its id, then the definition's JSON (one line).
soak_define() {  # campaignId json
    printf '%s\t%s\n' "$1" "$2" | kcat -b "$bootstrap" -t campaign.definitions -P -K $'\t' || { log "could not write the definition of $1"; exit 2; }
}

# The definitions the generator's sends name (chaos_soak.py): `soak-stored`, and `soak-cancelled`, defined and
# cancelled, both at `at`.
soak_define_campaigns() {  # at
    soak_define soak-stored '{"type":"campaign.defined","campaignId":"soak-stored","version":1,"template":"basic","occurredAt":"'"$1"'","content":{"title":"Stored, {{firstName}}!","body":"From the campaign table."}}'
    soak_define soak-cancelled '{"type":"campaign.defined","campaignId":"soak-cancelled","version":1,"template":"basic","occurredAt":"'"$1"'","content":{"title":"Cancelled","body":"Never sent."}}'
    soak_define soak-cancelled '{"type":"campaign.cancelled","campaignId":"soak-cancelled","occurredAt":"'"$1"'"}'
}

# The late campaign (`soak-late`, a carousel) the generator's sends name in the second half of its time, defined at `at`.
soak_define_late_campaign() {  # at body
    soak_define soak-late '{"type":"campaign.defined","campaignId":"soak-late","version":1,"template":"carousel","occurredAt":"'"$1"'","content":{"title":"Defined late","body":"'"$2"'","items":[{"image":"https://example.com/1.png","text":"1","uri":"https://example.com/1"},{"image":"https://example.com/2.png","text":"2","uri":"https://example.com/2"},{"image":"https://example.com/3.png","text":"3","uri":"https://example.com/3"}]}}'
}

# Reads topics back with kcat (`-J`, from the beginning) into topics/<name>.jsonl, for the checker: name:topic pairs.
soak_dump_topics() {  # name:topic...
    local pair
    for pair in "$@"; do
        kcat -b "$bootstrap" -C -t "${pair#*:}" -o beginning -e -J -q > "$dir/topics/${pair%%:*}.jsonl" 2>> "$dir/logs/kcat.log" \
            || { log "kcat could not read ${pair#*:}"; exit 2; }
    done
}

# Ends the soak with the checker's `result`, made a failure by any line in problems.txt (listed under `heading`), and
# names the logs of crashed processes.
soak_finish() {  # result heading
    local result=$1
    if [[ -s $dir/problems.txt ]]; then
        echo "  FAIL process: $2:"
        sed 's/^/       /' "$dir/problems.txt"
        result=1
    fi
    grep -l -E "Fatal error|Assertion failed|Precondition failed|Segmentation" "$dir"/logs/*.log 2> /dev/null | sed 's/^/  crash log: /'
    log "logs and topic dumps in $dir"
    exit "$result"
}
