/*
 * dist.h — the training tools' side of data-parallel runs (mpirun): start
 * MPI and tell cli.c about the job, and the thread count of a rank.
 *
 * Header-only on purpose: only the tools that include it (pretrain,
 * finetune) link lib/train/dist.c and with it Open MPI; every other tool
 * stays free of it.
 */
#ifndef NLP_BIN_DIST_H
#define NLP_BIN_DIST_H

#include <sched.h>

#include "base/thread.h"
#include "common/cli.h"
#include "train/dist.h"

/* Starts MPI when the program runs under mpirun (exits on failure); call
 * before cli_parse. */
static inline void cli_dist_start(int *argc, char ***argv)
{
    int rc = nlp_dist_init(argc, argv);
    if (rc) cli_fail(rc);
    cli_set_dist(nlp_dist_rank(), nlp_dist_size(), nlp_dist_abort, nlp_dist_abort_lead, nlp_dist_finalize);
}

/* --threads for this rank: n when given (> 0); in a job of several ranks
 * the CPUs this rank may run on (mpirun binds ranks to cores or sockets),
 * shared with the other ranks on its machine; else 0 (all CPUs). */
static inline int cli_dist_threads(long n)
{
    if (n > 0 || nlp_dist_size() <= 1) return (int)n;
    int k = nlp_cpu_count() / nlp_dist_local_ranks();
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < k) k = CPU_COUNT(&set);
    return k > 0 ? k : 1;
}

#endif
