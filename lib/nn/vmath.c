/*
 * vmath.c — accuracy self-test of the vectorisable exp and tanh. See vmath.h.
 */
#include "nn/vmath.h"

#include <float.h>
#include <math.h>

void nlp_vmath_selftest(double *exp_ulp, double *tanh_abs, double *erf_abs)
{
    double e = 0, t = 0, r = 0;
    for (double x = -87.0; x <= 88.37; x += 0.000731) {
        float f = (float)x;
        double want = exp((double)f), got = nlp_expf(f);
        double u = fabs(got - want) / (want * FLT_EPSILON);
        if (u > e) e = u;
    }
    for (double x = -20.0; x <= 20.0; x += 0.0001737) {
        float f = (float)x;
        double d = fabs((double)nlp_tanhf(f) - tanh((double)f));
        if (d > t) t = d;
    }
    for (double x = -8.0; x <= 8.0; x += 0.0000913) {
        float f = (float)x;
        double d = fabs((double)nlp_erff(f) - erf((double)f));
        if (d > r) r = d;
    }
    *exp_ulp = e;
    *tanh_abs = t;
    *erf_abs = r;
}
