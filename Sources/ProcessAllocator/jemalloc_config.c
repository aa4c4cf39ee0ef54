// The campaign-pipeline executable allocates through jemalloc on Linux (Package.swift links it into the executable
// only; the libraries and their users keep whatever allocator they link).
//
// Why: the pipeline allocates and frees on different threads (a payload made on a worker thread is freed on the
// producer's poll thread once librdkafka acknowledges it). glibc's malloc pays for that with arena locks and with
// fastbin consolidation on every allocation over 1 KiB (most payloads), and its per-thread arenas keep memory it
// cannot give back. Measured with `campaign-pipeline bench --events 200000` (README "Performance"): about a quarter
// less CPU per event and a lower peak RSS than glibc.
//
// jemalloc reads this string at start-up; the MALLOC_CONF environment variable is read after it, so any option can
// be overridden per deployment (for example MALLOC_CONF=narenas:4 on a machine with more cores).
// - narenas:2              two arenas, not four per CPU: fewer half-empty arenas, a lower peak RSS at no measured cost.
// - background_thread       purging of freed pages runs on jemalloc's own thread instead of on the pipeline's threads.
// - dirty_decay_ms:3000     freed pages go back to the system over 3 s instead of 10 s: ~4 MiB less peak RSS in the
//                           bench at no measured CPU cost (1 s saved ~7 MiB more but cost ~15 % more CPU per event).
#if defined(__linux__)
const char *malloc_conf = "narenas:2,background_thread:true,dirty_decay_ms:3000";
#endif
