/*
 * pool.h — a small fork-join pool for the short parallel loops of decoding,
 * independent of OpenMP's wait policy.
 *
 * A token of batch-1 decoding is a few dozen matrix-vector products of a few
 * microseconds each. Through OpenMP each is a parallel region, and what a
 * region costs depends on the environment: with OMP_WAIT_POLICY=PASSIVE
 * (which the training tools set, and users set on shared machines) every
 * region wakes sleeping threads, which takes longer than the work (GPT small:
 * 2,136-2,250 tokens/s with libgomp's default spinning, 1,071 passive), and
 * with spinning threads on an oversubscribed machine a region waits for a
 * thread that is not running (17 tokens/s measured with 2 threads while 8
 * processes shared the 2 cores).
 *
 * nlp_pool_for hands out the iterations of a loop one at a time from an
 * atomic counter to the calling thread and to helper threads of its own.
 * Helpers spin for a while after each loop (NLP_POOL_SPIN_US), so that the
 * next product of the same token finds them awake, then sleep on a futex
 * until the next loop. The caller never waits for a helper that has not
 * started: iterations nobody took are the caller's, and it waits only for
 * iterations already under way. Whatever the environment, a loop costs at
 * most what the caller alone would take plus one iteration.
 *
 * Which iteration runs on which thread varies from run to run: callers make
 * each iteration's result independent of that (each output computed by one
 * iteration, in a fixed order).
 *
 * Not here: the OpenMP set-up of the other tools (thread.h).
 */
#ifndef NLP_BASE_POOL_H
#define NLP_BASE_POOL_H

/* How long a helper spins after a loop before it sleeps (microseconds). */
#define NLP_POOL_SPIN_US 200

typedef void nlp_pool_fn(void *ctx, int i);

/* Runs fn(ctx, i) for every i in [0, n) on up to `threads` threads (the
 * caller and threads - 1 helpers, started on first use and kept); threads
 * <= 0 means the OpenMP thread count (nlp_threads_get). Returns when every
 * call has returned. Inside a pool iteration or an OpenMP parallel region,
 * or with one thread, the loop runs on the calling thread. If helper
 * threads cannot be started the loop runs on the caller alone. Not for
 * concurrent use from several threads of the caller's program (nlpipe's
 * tools decode from one thread). */
void nlp_pool_for(int n, int threads, nlp_pool_fn *fn, void *ctx);

/* Whether the calling thread is running a pool iteration. */
int nlp_pool_inside(void);

#endif
