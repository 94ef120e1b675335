/*
 * dist.c — data-parallel collectives over MPI (see dist.h), or the
 * functions of a one-rank job when built without MPI.
 *
 * Every collective is started non-blocking and completed by polling with
 * MPI_Test, so that a rank whose peer died or hangs notices: after
 * NLPIPE_MPI_TIMEOUT seconds without completion the call returns NLP_EIO
 * with a message naming the rank and the operation, and the program ends
 * the job (nlp_dist_abort). Polling spins for a while (latency matters for
 * the small per-step reductions), then sleeps in short naps.
 */
#include "train/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/err.h"
#include "base/prof.h"

static double wait_total;

double nlp_dist_wait_seconds(void) { return wait_total; }

#ifdef NLP_MPI
#include <mpi.h>

static int inited, finalized, my_rank, world = 1, local = 1;
static MPI_Request pending[NLP_DIST_MAX_PENDING];
static int npending;

static double timeout_seconds(void)
{
    const char *e = getenv("NLPIPE_MPI_TIMEOUT");
    double t = e ? atof(e) : 300;
    return t > 0 ? t : 300;
}

/* Started by mpirun (Open MPI, or a PMI/PMIx launcher such as srun)? */
static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("PMI_SIZE");
}

int nlp_dist_init(int *argc, char ***argv)
{
    if (inited || !launched()) return NLP_OK;
    int provided, rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return nlp_error(NLP_EIO, "MPI did not start (error %d)", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    inited = 1;
    return NLP_OK;
}

void nlp_dist_finalize(void)
{
    if (inited && !finalized) {
        nlp_dist_wait();
        MPI_Finalize();
        finalized = 1;
    }
}

void nlp_dist_abort(int code)
{
    if (inited && !finalized && world > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

void nlp_dist_abort_lead(int code)
{
    if (!inited || finalized || world <= 1) return;
    if (my_rank > 0) { /* rank 0's MPI_Abort ends this process while it naps */
        const double t0 = nlp_now(), limit = timeout_seconds();
        while (nlp_now() - t0 < limit) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    MPI_Abort(MPI_COMM_WORLD, code);
}

int nlp_dist_rank(void) { return my_rank; }
int nlp_dist_size(void) { return world; }
int nlp_dist_local_ranks(void) { return local > 0 ? local : 1; }

/* Polls requests r[0..n) to completion; NLP_EIO after the timeout or on an
 * MPI error. */
static int complete(MPI_Request *r, int n, const char *what)
{
    if (!n) return NLP_OK;
    const double t0 = nlp_now(), limit = timeout_seconds();
    long spins = 0;
    for (;;) {
        int done = 0, rc = MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            wait_total += nlp_now() - t0;
            return nlp_error(NLP_EIO, "%s failed: %s", what, msg);
        }
        if (done) break;
        if (++spins > 2000) { /* a while of spinning, then naps of 50 µs */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
            if (nlp_now() - t0 > limit) {
                wait_total += nlp_now() - t0;
                return nlp_error(NLP_EIO, "waiting for the other ranks: %s made no progress in %g s (a rank died or hangs; "
                                 "NLPIPE_MPI_TIMEOUT sets the limit)", what, limit);
            }
        }
    }
    wait_total += nlp_now() - t0;
    return NLP_OK;
}

static int reduce(void *x, size_t n, MPI_Datatype type, MPI_Op op, const char *what)
{
    if (world <= 1 || !n) return NLP_OK;
    MPI_Request r;
    if (n > (size_t)0x7fffffff) return nlp_error(NLP_EINVAL, "%s: %zu elements is more than MPI counts", what, n);
    int rc = MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, type, op, MPI_COMM_WORLD, &r);
    if (rc != MPI_SUCCESS) return nlp_error(NLP_EIO, "%s failed to start", what);
    return complete(&r, 1, what);
}

int nlp_dist_sum_f32(float *x, size_t n) { return reduce(x, n, MPI_FLOAT, MPI_SUM, "a sum (floats)"); }
int nlp_dist_sum_f64(double *x, size_t n) { return reduce(x, n, MPI_DOUBLE, MPI_SUM, "a sum of figures"); }
int nlp_dist_max_f64(double *x, size_t n) { return reduce(x, n, MPI_DOUBLE, MPI_MAX, "a maximum of figures"); }

int nlp_dist_bcast(void *buf, size_t bytes, int root)
{
    if (world <= 1 || !bytes) return NLP_OK;
    if (bytes > (size_t)0x7fffffff) return nlp_error(NLP_EINVAL, "broadcast of %zu bytes is more than MPI counts", bytes);
    MPI_Request r;
    if (MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD, &r) != MPI_SUCCESS)
        return nlp_error(NLP_EIO, "a broadcast failed to start");
    return complete(&r, 1, "a broadcast");
}

int nlp_dist_barrier(void)
{
    if (world <= 1) return NLP_OK;
    MPI_Request r;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) != MPI_SUCCESS)
        return nlp_error(NLP_EIO, "a barrier failed to start");
    return complete(&r, 1, "waiting for the other ranks");
}

int nlp_dist_sum_start(float *x, size_t n)
{
    if (world <= 1 || !n) return NLP_OK;
    int rc;
    if (npending == NLP_DIST_MAX_PENDING && (rc = nlp_dist_wait())) return rc;
    for (size_t done = 0; done < n;) { /* in pieces MPI can count */
        size_t k = n - done < (size_t)1 << 30 ? n - done : (size_t)1 << 30;
        if (npending == NLP_DIST_MAX_PENDING && (rc = nlp_dist_wait())) return rc;
        if (MPI_Iallreduce(MPI_IN_PLACE, x + done, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &pending[npending]) !=
            MPI_SUCCESS)
            return nlp_error(NLP_EIO, "the gradient sum failed to start");
        npending++;
        done += k;
    }
    return NLP_OK;
}

void nlp_dist_progress(void)
{
    if (!npending) return;
    int done;
    MPI_Testall(npending, pending, &done, MPI_STATUSES_IGNORE);
}

int nlp_dist_wait(void)
{
    int rc = complete(pending, npending, "the gradient sum");
    npending = 0;
    return rc;
}

#else /* one rank */

int nlp_dist_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return NLP_OK;
}
void nlp_dist_finalize(void) {}
void nlp_dist_abort(int code) { (void)code; }
void nlp_dist_abort_lead(int code) { (void)code; }
int nlp_dist_rank(void) { return 0; }
int nlp_dist_size(void) { return 1; }
int nlp_dist_local_ranks(void) { return 1; }
int nlp_dist_sum_f32(float *x, size_t n) { return (void)x, (void)n, NLP_OK; }
int nlp_dist_sum_f64(double *x, size_t n) { return (void)x, (void)n, NLP_OK; }
int nlp_dist_max_f64(double *x, size_t n) { return (void)x, (void)n, NLP_OK; }
int nlp_dist_bcast(void *buf, size_t bytes, int root) { return (void)buf, (void)bytes, (void)root, NLP_OK; }
int nlp_dist_barrier(void) { return NLP_OK; }
int nlp_dist_sum_start(float *x, size_t n) { return (void)x, (void)n, NLP_OK; }
void nlp_dist_progress(void) {}
int nlp_dist_wait(void) { return NLP_OK; }

#endif
