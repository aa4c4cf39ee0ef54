// How many tests Swift Testing runs at once in this test binary, when the environment does not say.
//
// Swift Testing's default width is unbounded: it starts all ~540 tests of this package at once. On two cores the
// run's first minute then starves the cooperative pool (its worst wait reached 12-13 s), and tests with timeouts fail
// for no fault of their own. Eight tests per core keeps the worst wait to a few seconds (README, Development).
//
// The limit is `SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH`, which Swift Testing reads once, when its entry point
// first runs, after `main` starts; no Swift code of a test can set it in time. A load-time constructor can, so a plain
// `swift test` gets the same width as `make test`. A width given in the environment is never changed.
#include "TestRunWidth.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char widthVariable[] = "SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH";
static const long testsPerCore = 8;
static long defaultWidth = 0;

__attribute__((constructor))
static void bound_the_test_run_width(void) {
    if (getenv(widthVariable) != NULL) return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    char width[24];
    snprintf(width, sizeof width, "%ld", cores * testsPerCore);
    if (setenv(widthVariable, width, 0) == 0) defaultWidth = cores * testsPerCore;
}

long campaign_test_run_default_width(void) {
    return defaultWidth;
}
