#!/usr/bin/env bash
# Fails when a build log shows compiler warnings in our own code (dependencies are not ours to fix): the package's
# and the nested Benchmarks package's.
#   scripts/check-warnings.sh build.log
set -euo pipefail
log="$1"
# The physical path (-P): the compiler names files by it, also when the checkout is reached through a symbolic link.
root="$(cd "$(dirname "$0")/.." && pwd -P)"
# The root as a literal in the pattern: a checkout's path may hold characters the pattern would read otherwise
# (`a+b` matched only `ab`, `aab`, ..., and the warnings of a checkout at /src/a+b went unseen).
root_pattern="$(printf '%s' "$root" | sed 's/[][\\.*^$+?(){}|]/\\&/g')"
if grep -E "^(${root_pattern}/)?(Sources|Plugins|Tests|Benchmarks/Sources|Benchmarks/Benchmarks)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u; then
    echo "error: the build shows warnings in our code (above); fix them" >&2
    exit 1
fi
