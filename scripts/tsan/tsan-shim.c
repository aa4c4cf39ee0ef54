// LD_PRELOAD shim for running librdkafka (built on glibc's C11 <threads.h>) under ThreadSanitizer.
// glibc's thrd_create/mtx_*/cnd_* call pthread internals directly, so TSan's pthread interceptors never see
// librdkafka's threads (which then crash in TSan's allocator) nor its locks. Route them through pthread_*.
#define _GNU_SOURCE
#include <threads.h>
#include <pthread.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>

static int map(int e) {
    switch (e) {
    case 0: return thrd_success;
    case EBUSY: return thrd_busy;
    case ETIMEDOUT: return thrd_timedout;
    case ENOMEM: return thrd_nomem;
    default: return thrd_error;
    }
}

struct start { thrd_start_t func; void *arg; };
static void *trampoline(void *p) {
    struct start s = *(struct start *)p;
    free(p);
    return (void *)(intptr_t)s.func(s.arg);
}
int thrd_create(thrd_t *thr, thrd_start_t func, void *arg) {
    struct start *s = malloc(sizeof *s);
    if (!s) return thrd_nomem;
    s->func = func; s->arg = arg;
    int e = pthread_create((pthread_t *)thr, NULL, trampoline, s);
    if (e) free(s);
    return map(e);
}
int thrd_join(thrd_t thr, int *res) {
    void *r;
    int e = pthread_join((pthread_t)thr, &r);
    if (!e && res) *res = (int)(intptr_t)r;
    return map(e);
}
int thrd_detach(thrd_t thr) { return map(pthread_detach((pthread_t)thr)); }
thrd_t thrd_current(void) { return (thrd_t)pthread_self(); }
_Noreturn void thrd_exit(int res) { pthread_exit((void *)(intptr_t)res); }

int mtx_init(mtx_t *m, int type) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    int e = pthread_mutex_init((pthread_mutex_t *)m, &a);
    pthread_mutexattr_destroy(&a);
    return map(e);
}
int mtx_lock(mtx_t *m) { return map(pthread_mutex_lock((pthread_mutex_t *)m)); }
int mtx_trylock(mtx_t *m) { return map(pthread_mutex_trylock((pthread_mutex_t *)m)); }
int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict t) { return map(pthread_mutex_timedlock((pthread_mutex_t *)m, t)); }
int mtx_unlock(mtx_t *m) { return map(pthread_mutex_unlock((pthread_mutex_t *)m)); }
void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }

int cnd_init(cnd_t *c) { return map(pthread_cond_init((pthread_cond_t *)c, NULL)); }
int cnd_signal(cnd_t *c) { return map(pthread_cond_signal((pthread_cond_t *)c)); }
int cnd_broadcast(cnd_t *c) { return map(pthread_cond_broadcast((pthread_cond_t *)c)); }
int cnd_wait(cnd_t *c, mtx_t *m) { return map(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m)); }
int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict t) {
    return map(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, t));
}
void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }

void call_once(once_flag *f, void (*func)(void)) { pthread_once((pthread_once_t *)f, func); }

// Makes Synchronization.Mutex visible to ThreadSanitizer on Linux: its contended paths (_lockSlow, _tryLockSlow,
// _unlockSlow in libswiftSynchronization.so) take and hand over the lock with futex syscalls that TSan cannot see,
// so every contended withLock looked like a race. Wrapped with __tsan_acquire / __tsan_release on the lock word.
#include <dlfcn.h>
#include <stdbool.h>
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdbool.h>
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define SWIFTCALL __attribute__((swiftcall))
#define SELF __attribute__((swift_context))
typedef SWIFTCALL void (*lock_slow_t)(uint32_t, void *SELF);
typedef SWIFTCALL bool (*try_lock_slow_t)(void *SELF);
typedef SWIFTCALL void (*unlock_slow_t)(void *SELF);

SWIFTCALL void lock_slow(uint32_t id, void *SELF self) __asm__("$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF");
SWIFTCALL void lock_slow(uint32_t id, void *SELF self) {
    static lock_slow_t real;
    if (!real) real = (lock_slow_t)dlsym(RTLD_NEXT, "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF");
    real(id, self);
    __tsan_acquire(self);
}
SWIFTCALL bool try_lock_slow(void *SELF self) __asm__("$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF");
SWIFTCALL bool try_lock_slow(void *SELF self) {
    static try_lock_slow_t real;
    if (!real) real = (try_lock_slow_t)dlsym(RTLD_NEXT, "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF");
    bool r = real(self);
    if (r) __tsan_acquire(self);
    return r;
}
SWIFTCALL void unlock_slow(void *SELF self) __asm__("$s15Synchronization12_MutexHandleV11_unlockSlowyyF");
SWIFTCALL void unlock_slow(void *SELF self) {
    static unlock_slow_t real;
    if (!real) real = (unlock_slow_t)dlsym(RTLD_NEXT, "$s15Synchronization12_MutexHandleV11_unlockSlowyyF");
    __tsan_release(self);
    real(self);
}
