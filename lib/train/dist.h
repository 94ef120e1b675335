/*
 * dist.h — data-parallel training over MPI: the same program on N processes
 * (ranks, started by mpirun), each on its share of every batch, with the
 * gradients summed across ranks before each optimizer step.
 *
 * Built with MPI (NLP_MPI defined: the Makefile's default where mpicc is
 * found) the functions talk to MPI_COMM_WORLD; built without it (make MPI=0)
 * they are those of a job of one rank, so callers need no #ifdef. A
 * program not started by mpirun is a job of one rank either way.
 *
 * Collectives never hang: every reduction is non-blocking and polled, and
 * one that makes no progress for NLPIPE_MPI_TIMEOUT seconds (default 300:
 * another rank died, or hangs) returns NLP_EIO with a message naming this
 * rank and the operation; the program then ends the job (nlp_dist_abort).
 * The library itself never aborts.
 *
 * Not here: what is reduced (the training loop, the tasks' validation).
 */
#ifndef NLP_TRAIN_DIST_H
#define NLP_TRAIN_DIST_H

#include <stddef.h>

/* Initialises MPI when the program was started by mpirun (its environment
 * says so), with MPI_THREAD_FUNNELED (OpenMP threads inside a rank, MPI
 * calls from the main thread only). Idempotent. Returns 0, or NLP_EIO when
 * MPI fails to start. */
int nlp_dist_init(int *argc, char ***argv);

/* Finalizes MPI (at the end of main; harmless when not initialised). */
void nlp_dist_finalize(void);

/* Aborts the whole job (every rank) with exit status code: for a rank that
 * fails while the others wait in a collective. A job of one rank just
 * returns. */
void nlp_dist_abort(int code);

/* Aborts the job with status code on behalf of rank 0, for a failure every
 * rank meets alike and rank 0 alone reports (a usage error: every rank
 * parses the same command line). Rank 0 aborts at once, after its message;
 * another rank waits for that abort to end it (naps), so that it cannot end
 * the job before rank 0 has said why, and aborts itself only after
 * NLPIPE_MPI_TIMEOUT seconds (rank 0 did not meet the failure). A job of
 * one rank just returns. */
void nlp_dist_abort_lead(int code);

/* This process's rank in [0, size), and the number of ranks (1 without MPI). */
int nlp_dist_rank(void);
int nlp_dist_size(void);
/* The ranks on this machine (sharing its CPUs), this one included. */
int nlp_dist_local_ranks(void);

/* In place: x[0..n) summed over every rank (every rank gets the sum).
 * Returns 0, or NLP_EIO (an MPI failure, or the timeout). */
int nlp_dist_sum_f32(float *x, size_t n);
int nlp_dist_sum_f64(double *x, size_t n);
/* The largest value over the ranks, in place. */
int nlp_dist_max_f64(double *x, size_t n);

/* Copies root's buf[0..bytes) to every rank. */
int nlp_dist_bcast(void *buf, size_t bytes, int root);

/* Waits for every rank. */
int nlp_dist_barrier(void);

/* Overlapped gradient reduction: start summing x[0..n) in place across the
 * ranks and return at once; nlp_dist_wait() completes every reduction
 * started since the last wait. At most NLP_DIST_MAX_PENDING at a time (a
 * further start waits for the oldest). */
#define NLP_DIST_MAX_PENDING 64
int nlp_dist_sum_start(float *x, size_t n);
int nlp_dist_wait(void);
/* Lets started reductions advance (MPI moves them on only inside its
 * calls): the backward pass calls it between layers. */
void nlp_dist_progress(void);

/* Seconds spent waiting for collectives to complete (communication not
 * hidden behind computation), since the start. */
double nlp_dist_wait_seconds(void);

/* 1 when the k-th of a set of items (validation batches) is this rank's:
 * k mod size == rank. */
static inline int nlp_dist_mine(size_t k, int rank, int size) { return size <= 1 || (int)(k % (size_t)size) == rank; }

#endif
