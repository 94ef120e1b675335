/*
 * thread.h — thread counts and OpenMP set-up shared by every tool.
 *
 * nlpipe parallelises with OpenMP. The machines it runs on are often shared,
 * where spinning worker threads collapse under load, so tools that use
 * threads call nlp_threads_passive() first thing in main: it makes sure the
 * OpenMP runtime starts with OMP_WAIT_POLICY=PASSIVE (libgomp reads the
 * variable once, when it loads, so the process re-executes itself once with
 * the variable set unless the user chose a policy).
 *
 * Not here: the parallel algorithms themselves.
 */
#ifndef NLP_BASE_THREAD_H
#define NLP_BASE_THREAD_H

/* Decoding (generate, translate) is the exception: a token is hundreds of
 * short parallel regions, and a sleeping worker takes longer to wake than
 * such a region runs (gpt small: 550 tokens/s passive, 3,400 with spinning).
 * Those tools leave OMP_WAIT_POLICY unset instead: libgomp's default then
 * spins for a bounded time (GOMP_SPINCOUNT 300,000) before sleeping, and
 * spins only 100 times when there are more threads than CPUs. A policy the
 * user set is kept either way. */

/* Number of online CPUs (at least 1). */
int nlp_cpu_count(void);

/* Sets the OpenMP thread count for later parallel regions; n <= 0 means
 * nlp_cpu_count(). Returns the count in effect. */
int nlp_threads_set(int n);

/* The count in effect. */
int nlp_threads_get(void);

/* Re-executes the running program with OMP_WAIT_POLICY=PASSIVE when the
 * variable is unset (and marks the environment so it happens only once).
 * Returns only if no re-execution was needed or it failed (then threads
 * simply keep the runtime's default policy). */
void nlp_threads_passive(int argc, char **argv);

#endif
