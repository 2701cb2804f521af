#!/usr/bin/env bash
# The experiments of docs/measured-results.md, against the server the recipe built (recipe.sh): what this
# script runs is what the page reports. Each step logs its start, end and duration to OUT/experiments.log.
#
#   bench/real-model/experiments.sh DIR OUT [PORT]
#
# DIR is the recipe's directory (llama-server and the model); OUT gets every report, each step's own
# configuration home (OUT/config-*) and the cassettes. The server is started on 127.0.0.1:PORT (default 8080)
# unless one already answers there (SERVER_URL=http://HOST:PORT/v1 points at another one, e.g. alisio eval
# mock-endpoint to try this script without a model). Knobs (environment): K (repetitions of the built-in agent
# per arm and wire format, default 3), K_AGENTS (external agents, default 2), WALL_MS (the tasks' maxWallMs,
# default 600000: smoke-coding's 120 s is less than one uncached first prompt of OpenCode on 2 cores),
# TASKS (default fix-add), APIS (default "openai-chat openai-responses anthropic"), STEPS (default
# "variants agents replay"), ALISIO (default: the checkout's .venv/bin/alisio), AGENTS_BIN (where OpenCode and
# Codex are, default the checkout's .agents/bin: make agents-node).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MODEL_NAME=qwen2.5-coder-1.5b
K=${K:-3}
K_AGENTS=${K_AGENTS:-2}
WALL_MS=${WALL_MS:-600000}
TASKS=${TASKS:-fix-add}
APIS=${APIS:-openai-chat openai-responses anthropic}
STEPS=${STEPS:-variants agents replay}
ALISIO=${ALISIO:-$ROOT/.venv/bin/alisio}
AGENTS_BIN=${AGENTS_BIN:-$ROOT/.agents/bin}

[ $# -ge 2 ] || { echo "usage: $0 DIR OUT [PORT]" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
PORT=${3:-8080}
URL=${SERVER_URL:-http://127.0.0.1:$PORT/v1}

log() {
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$OUT/experiments.log" >&2
}

# Runs a named step, logging its duration and exit code (a step that exits 1 because some run ended error
# still wrote its report: the page says so).
timed() {
    local name=$1
    shift
    local start code=0
    start=$(date +%s)
    log "start $name: $*"
    "$@" || code=$?
    log "done $name in $(($(date +%s) - start)) s (exit $code)"
}

serving() {
    python3 - "$URL" <<'EOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1].removesuffix("/v1") + "/health", timeout=5) as answer:
        sys.exit(0 if answer.status == 200 else 1)
except Exception:
    sys.exit(1)
EOF
}

start_server() {
    if [ -n "${SERVER_URL:-}" ]; then
        log "using the server at $SERVER_URL"
        return
    fi
    if serving; then
        log "a server already answers at $URL"
        return
    fi
    "$HERE/recipe.sh" start "$DIR" "$PORT" >"$OUT/llama-server.log" 2>&1 &
    echo $! >"$OUT/llama-server.pid"
    for _ in $(seq 1 600); do
        serving && return
        sleep 1
    done
    echo "$0: llama-server did not answer at $URL within 600 s (see $OUT/llama-server.log)" >&2
    exit 1
}

# smoke-coding as bundled, but with a wall-time budget a 2-core CPU server can meet (WALL_MS).
make_suite() {
    rm -rf "$OUT/suite"
    cp -r "$ROOT/suites/smoke-coding" "$OUT/suite"
    python3 - "$OUT/suite/suite.json" "$WALL_MS" <<'EOF'
import json, sys
path, wall = sys.argv[1], int(sys.argv[2])
suite = json.load(open(path))
for task in suite["tasks"]:
    task["budget"]["maxWallMs"] = wall
json.dump(suite, open(path, "w"), indent=2)
EOF
}

# A configuration home speaking API to the server (no key: the llamacpp preset sends none).
config_home() {
    local name=$1 api=$2 extra=${3:-}
    mkdir -p "$OUT/config-$name"
    printf '[provider]\npreset = "llamacpp"\napi = "%s"\nbaseUrl = "%s"\nmodel = "%s"\n%s' \
        "$api" "$URL" "$MODEL_NAME" "$extra" >"$OUT/config-$name/config.toml"
    echo "$OUT/config-$name"
}

lab() {
    local home=$1
    shift
    ALISIO_CONFIG_HOME=$home ALISIO_DATA_HOME=$OUT/data "$ALISIO" eval "$@"
}

variants() {
    printf '{"suite": "smoke-coding", "variants": [%s, %s]}\n' \
        '{"id": "textcalls-off", "overrides": {"tools.textCalls": "off"}}' \
        '{"id": "textcalls-parse", "overrides": {"tools.textCalls": "parse"}}' >"$OUT/textcalls.json"
    for api in $APIS; do
        local home
        home=$(config_home "$api" "$api")
        timed "variants $api" lab "$home" variants "$OUT/suite" --variants "$OUT/textcalls.json" --yes \
            --tasks "$TASKS" -k "$K" -j 2 --allow-write --allow-process --out "$OUT/variants-$api"
    done
}

agents() {
    local home
    home=$(config_home agents openai-chat "$(printf '\n[agents.opencode]\nkind = "opencode"\nbinary = "%s"\n\n[agents.codex]\nkind = "codex"\nbinary = "%s"\n' "$AGENTS_BIN/opencode" "$AGENTS_BIN/codex")")
    for agent in opencode codex; do
        timed "agent $agent" lab "$home" run "$OUT/suite" --agent "$agent" --yes --tasks "$TASKS" -k "$K_AGENTS" \
            -j 1 --sandbox bwrap --allow-write --allow-process --out "$OUT/agent-$agent"
    done
}

replay() {
    local home
    home=$(config_home replay openai-chat $'\n[tools]\ntextCalls = "parse"\n')
    timed "record" lab "$home" record "$OUT/suite" --yes --tasks fix-add --cassette-dir "$OUT/cassettes" \
        --allow-write --allow-process
    timed "replay" lab "$home" run "$OUT/suite" --mode replay --yes --tasks fix-add \
        --cassette-dir "$OUT/cassettes" --allow-write --allow-process --out "$OUT/replay"
}

log "experiments: K=$K K_AGENTS=$K_AGENTS WALL_MS=$WALL_MS TASKS=$TASKS APIS=($APIS) STEPS=($STEPS) server $URL"
timed "server ready" start_server
make_suite
for step in $STEPS; do
    "$step"
done
log "experiments done: reports in $OUT"
