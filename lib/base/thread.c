/*
 * thread.c — thread counts and passive OpenMP waiting. See thread.h.
 */
#include "base/thread.h"

#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

int nlp_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int nlp_threads_set(int n)
{
    if (n <= 0) n = nlp_cpu_count();
    omp_set_num_threads(n);
    return n;
}

int nlp_threads_get(void) { return omp_get_max_threads(); }

void nlp_threads_passive(int argc, char **argv)
{
    (void)argc;
    if (getenv("OMP_WAIT_POLICY") || getenv("NLPIPE_NO_REEXEC")) return;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    setenv("NLPIPE_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the default policy */
}
