/*
 * prof.c — the monotonic clock and the per-phase profile. See prof.h.
 */
#include "base/prof.h"

#include <string.h>
#include <time.h>

#define MAX_ROWS 128

int nlp_prof_on;
static nlp_prof_row g_rows[MAX_ROWS];
static int g_n;

double nlp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void nlp_prof_enable(int on)
{
    nlp_prof_on = on != 0;
    if (on) {
        memset(g_rows, 0, sizeof g_rows);
        g_n = 0;
    }
}

void nlp_prof_add(const char *name, double t0, double flops, double bytes)
{
    double dt = nlp_now() - t0;
    int i = 0;
    while (i < g_n && g_rows[i].name != name && strcmp(g_rows[i].name, name) != 0) i++;
    if (i == g_n) {
        if (g_n == MAX_ROWS) return; /* more phases than rows: the rest go unrecorded */
        g_rows[g_n++] = (nlp_prof_row){.name = name};
    }
    g_rows[i].sec += dt;
    g_rows[i].flops += flops;
    g_rows[i].bytes += bytes;
    g_rows[i].calls++;
}

int nlp_prof_rows(const nlp_prof_row **rows)
{
    *rows = g_rows;
    return g_n;
}
