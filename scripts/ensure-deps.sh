#!/usr/bin/env bash
# Installs the system packages the build needs when they are missing.
#   scripts/ensure-deps.sh          librdkafka-dev, libjemalloc-dev and pkg-config (to build and run)
#   scripts/ensure-deps.sh test     the same, plus kcat (the tests use it as an independent Kafka client)
set -euo pipefail

if ! command -v swift >/dev/null 2>&1; then
    echo "error: swift is not on PATH; install a Swift 6.2+ toolchain first (https://www.swift.org/install/linux/)" >&2
    exit 1
fi

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if ! pkg-config --exists rdkafka 2>/dev/null || [ ! -f /usr/include/librdkafka/rdkafka_mock.h ]; then
    missing+=(librdkafka-dev)
fi
# The executable allocates through jemalloc (Sources/ProcessAllocator).
pkg-config --exists jemalloc 2>/dev/null || missing+=(libjemalloc-dev)
if [ "${1:-}" = "test" ]; then
    command -v kcat >/dev/null 2>&1 || missing+=(kcat)
fi

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    echo "Installing ${missing[*]} ..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "error: missing system packages: ${missing[*]}" >&2
    echo "Install them with:" >&2
    echo "    sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
