#ifndef TEST_RUN_WIDTH_H
#define TEST_RUN_WIDTH_H

/// The parallelization width this test binary gave Swift Testing at load time (eight tests per online core), or 0
/// when the environment already set one (`make test TEST_WIDTH=…`, or the variable itself), which is then left alone.
long campaign_test_run_default_width(void);

#endif
