/*
 * prof.h — the monotonic clock, and a per-phase profile of where a training
 * step's time goes (trainbench --profile).
 *
 * The layers of the engine mark their phases (a linear layer's forward, the
 * attention's backward, LayerNorm, the loss, the optimizer...) with
 * NLP_PROF(name, flops, bytes, statement...). While the profile is off (the
 * default) that is one predictable branch around the statement; on, the
 * statement is timed and its wall-clock seconds, flops and bytes moved are
 * added to the phase's row. Phases are timed where the calling thread runs
 * them, outside parallel regions, so a row is the time the whole team spent
 * in that phase. Nested phases are allowed; the report says which rows are
 * parts of others.
 *
 * Not here: what the rows mean for a workload (tools/trainbench prints them).
 */
#ifndef NLP_BASE_PROF_H
#define NLP_BASE_PROF_H

/* Seconds on a monotonic clock (CLOCK_MONOTONIC), for timing intervals. */
double nlp_now(void);

typedef struct nlp_prof_row {
    const char *name; /* a string literal: rows are told apart by it */
    double sec, flops, bytes;
    long calls;
} nlp_prof_row;

extern int nlp_prof_on;

/* Switches profiling on or off; on also clears the rows. */
void nlp_prof_enable(int on);

/* Adds one timed interval that began at t0 (nlp_now()) to row `name`. */
void nlp_prof_add(const char *name, double t0, double flops, double bytes);

/* The rows so far, in order of first use; returns their number. */
int nlp_prof_rows(const nlp_prof_row **rows);

/* The statement comes last (variadic, so that commas in it need no
 * parentheses); a `return` inside it skips the timing. */
#define NLP_PROF(name, flops, bytes, ...) \
    do { \
        if (nlp_prof_on) { \
            double nlp_prof_t0_ = nlp_now(); \
            __VA_ARGS__; \
            nlp_prof_add(name, nlp_prof_t0_, (double)(flops), (double)(bytes)); \
        } else { \
            __VA_ARGS__; \
        } \
    } while (0)

#endif
