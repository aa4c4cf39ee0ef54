#!/usr/bin/env bash
# The tests under ThreadSanitizer, with scripts/tsan/tsan-shim.c preloaded. Without it, TSan on this platform is
# unusable: librdkafka (Debian's 2.0.2) starts its threads with glibc's C11 thrd_create, which TSan does not intercept,
# so the first librdkafka thread crashes in TSan's allocator (SEGV at 0xc38 in "rdk:mock"); and Synchronization.Mutex
# hands its lock over with futex syscalls TSan cannot see, so every contended withLock is reported as a race. The shim
# routes the C11 thread, mutex and condition calls through pthread and annotates the Mutex's slow paths.
#   scripts/tsan-test.sh KafkaClientTests            # builds into .build-tsan, then runs the suites matching the filter
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .build-tsan
shim=.build-tsan/libtsan-shim.so
# The toolchain's own clang (its TSan runtime is the one Swift links), wherever the toolchain is installed.
clang="$(dirname "$(readlink -f "$(command -v swift)")")/clang"
"$clang" -O1 -fPIC -shared -o "$shim" scripts/tsan/tsan-shim.c -ldl -lpthread -Wl,--unresolved-symbols=ignore-all
swift build --build-tests --sanitize=thread --scratch-path .build-tsan
LD_PRELOAD="$PWD/$shim" TSAN_OPTIONS="halt_on_error=0 ${TSAN_OPTIONS:-}" \
    swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "${1:-KafkaClientTests}"
