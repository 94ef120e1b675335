/*
 * pool.c — fork-join loops for decoding on helper threads that spin, then
 * sleep. See pool.h.
 *
 * One loop is live at a time. Its state is one 64-bit word: the loop's id
 * (24 bits), its iteration count n (20 bits) and the next iteration to hand
 * out (20 bits). A thread takes iteration i by a compare-and-swap of
 * (id, n, i) to (id, n, i + 1), so a helper that wakes late, holding the id
 * of a loop that has ended, can never take an iteration of the next one.
 * The caller publishes a loop only after the previous one's n iterations
 * have all returned (`done`), so the function and context a helper reads
 * after taking an iteration are that loop's.
 */
#include "base/pool.h"

#include <linux/futex.h>
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_HELPERS 63
#define MAX_N ((1 << 20) - 1)

static struct {
    pthread_mutex_t run;   /* one loop at a time (a second caller runs its loop alone) */
    pthread_mutex_t start; /* starting helpers */
    int helpers;           /* started */
    uint32_t gen;          /* futex word: the id of the latest loop */
    uint64_t state;        /* id << 40 | n << 20 | next */
    uint32_t done;         /* iterations of the live loop that have returned */
    int want;              /* helpers that may take part in the live loop */
    int sleepers;          /* helpers waiting on the futex */
    nlp_pool_fn *fn;
    void *ctx;
} P = {.run = PTHREAD_MUTEX_INITIALIZER, .start = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int tl_inside;

int nlp_pool_inside(void) { return tl_inside; }

static inline void cpu_relax(void) { __builtin_ia32_pause(); }

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Takes the next iteration of loop `id`: 1 with *i set, or 0 when the loop
 * has none left or is not the live one. */
static int take(uint32_t id, int *i)
{
    uint64_t s = __atomic_load_n(&P.state, __ATOMIC_ACQUIRE);
    for (;;) {
        const uint32_t sid = (uint32_t)(s >> 40), n = (uint32_t)(s >> 20) & MAX_N, next = (uint32_t)s & MAX_N;
        if (sid != id || next >= n) return 0;
        if (__atomic_compare_exchange_n(&P.state, &s, s + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            *i = (int)next;
            return 1;
        }
    }
}

static void work(uint32_t id)
{
    int i;
    while (take(id, &i)) {
        P.fn(P.ctx, i);
        __atomic_add_fetch(&P.done, 1, __ATOMIC_RELEASE);
    }
}

static void *helper(void *arg)
{
    const int idx = (int)(intptr_t)arg;
    tl_inside = 1;
    omp_set_num_threads(1); /* an OpenMP region started from an iteration stays on this thread */
    uint32_t seen = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE);
    for (;;) {
        /* spin for the next loop, then sleep until it is published */
        uint32_t g;
        double t0 = 0;
        for (unsigned spins = 0; (g = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE)) == seen; spins++) {
            cpu_relax();
            if ((spins & 255) == 0) {
                const double t = now_us();
                if (spins == 0) t0 = t;
                else if (t - t0 > NLP_POOL_SPIN_US) {
                    __atomic_add_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
                    syscall(SYS_futex, &P.gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
                    __atomic_sub_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
                    spins = 0;
                }
            }
        }
        seen = g;
        if (idx < __atomic_load_n(&P.want, __ATOMIC_RELAXED)) work(g & 0xffffff);
    }
    return NULL;
}

/* Starts helpers up to `want` (under P.start); returns how many run. */
static int start_helpers(int want)
{
    if (want > MAX_HELPERS) want = MAX_HELPERS;
    int have = __atomic_load_n(&P.helpers, __ATOMIC_ACQUIRE);
    if (have >= want) return want;
    pthread_mutex_lock(&P.start);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 1 << 20);
    while (P.helpers < want) {
        pthread_t t;
        if (pthread_create(&t, &a, helper, (void *)(intptr_t)P.helpers) != 0) break;
        __atomic_add_fetch(&P.helpers, 1, __ATOMIC_RELEASE);
    }
    pthread_attr_destroy(&a);
    have = P.helpers;
    pthread_mutex_unlock(&P.start);
    return have < want ? have : want;
}

void nlp_pool_for(int n, int threads, nlp_pool_fn *fn, void *ctx)
{
    if (n <= 0) return;
    if (threads <= 0) threads = omp_get_max_threads();
    if (threads > n) threads = n;
    if (threads <= 1 || n > MAX_N || tl_inside || omp_in_parallel() || pthread_mutex_trylock(&P.run) != 0) {
        const int was = tl_inside;
        tl_inside = 1;
        for (int i = 0; i < n; i++) fn(ctx, i);
        tl_inside = was;
        return;
    }
    const int helpers = start_helpers(threads - 1);
    P.fn = fn;
    P.ctx = ctx;
    __atomic_store_n(&P.want, helpers, __ATOMIC_RELAXED);
    __atomic_store_n(&P.done, 0, __ATOMIC_RELAXED);
    const uint32_t g = P.gen + 1, id = g & 0xffffff;
    __atomic_store_n(&P.state, (uint64_t)id << 40 | (uint64_t)n << 20, __ATOMIC_RELEASE);
    __atomic_store_n(&P.gen, g, __ATOMIC_SEQ_CST);
    if (helpers > 0 && __atomic_load_n(&P.sleepers, __ATOMIC_SEQ_CST) > 0)
        syscall(SYS_futex, &P.gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    tl_inside = 1;
    work(id);
    tl_inside = 0;
    /* iterations under way on helpers; yield now and then in case one of
     * them is waiting for this CPU */
    for (unsigned spins = 1; __atomic_load_n(&P.done, __ATOMIC_ACQUIRE) < (uint32_t)n; spins++) {
        cpu_relax();
        if ((spins & 1023) == 0) sched_yield();
    }
    pthread_mutex_unlock(&P.run);
}
