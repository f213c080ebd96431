// The CPU's erfcx: a polynomial (no exp, erfc or branch, so that the CPU's loops over it
// vectorise), and the sum and difference of two erfcx without cancellation (erfcx_pair), for
// math.hpp's stable forms. Host only: the GPU has CUDA's erfcx.
#pragma once

#include <cmath>

#include "common/hd.hpp"

namespace hpcml::detail::invgauss {

// erfcx(x) = exp(x^2) erfc(x) for x >= 0 as g(t) / (1 + 2x), t = (x - 3.5) / (x + 3.5), which maps
// [0, inf] onto [-1, 1], where g = erfcx(x) (1 + 2x) is smooth and flat (from 1 to 2 / sqrt pi).
// kErfcxG: g's Chebyshev series at 50 digits (bench/fit_erfcx.py), cut below 2e-18, as the
// coefficients of a polynomial of degree 25 in t, from t^0; they sum to 1.8 in magnitude, so no
// cancellation. exp(x^2) erfc(x) took twice the time, and another formula past x = 26, where erfc
// underflows. Within 3.2 x 2^-53 of long double (tests/test_invgauss_math.cpp).
inline constexpr double kErfcxG[26] = {
    1.2423492448711544,      -0.1400091801376194,    -0.010555596332218569,  0.09751909515325616,
    -0.11508959816017852,    0.08798315382498854,    -0.04882332582812556,   0.019099330939674558,
    -0.004215019906373612,   -0.0003022678446604841, 0.000564384418191686,   -0.0001215126588509358,
    -4.278228563287069e-05,  2.4262038916276542e-05, 2.328626178388271e-06,  -3.817786378297826e-06,
    -4.5143146280953446e-08, 6.070320817702346e-07,  -6.466973089768061e-09, -1.0185275898831116e-07,
    -7.57017975707362e-10,   1.7051623945135418e-08, 6.021972015439118e-10,  -2.4119164858055925e-09,
    -9.029888342508032e-11,  1.9939963150163616e-10,
};
// t, from u = x / (x + 3.5) (whose error vanishes with x, where g is steepest in t); for
// erfcx_pair's difference, d = 1 - t = 7 / (x + 3.5) and yd = (1 + 2x) d = 7 (1 / (x + 3.5) + 2u),
// accurate in relative terms (sums of positive terms) and finite at x = inf, where t = 1.
struct ErfcxVariable {
    double t, d, yd;
};
inline ErfcxVariable erfcx_variable(double x) {
    const double inv = 1.0 / (x + 3.5), u = x < HUGE_VAL ? x * inv : 1.0;
    return {fma(2.0, u, -1.0), 7.0 * inv, 7.0 * fma(2.0, u, inv)};
}

// g(t) = c_0 + t Q(t), Q by Estrin's scheme (a short chain of multiply-adds): Q's rounding is
// damped by |t Q / g| <= 0.24.
inline double erfcx_g(double t) {
    const double* c = kErfcxG + 1;  // Q's coefficients
    const double t2 = t * t, t4 = t2 * t2, t8 = t4 * t4, t16 = t8 * t8;
    double p[13];
    HPCML_UNROLL(12)
    for (int i = 0; i < 12; ++i) p[i] = fma(t, c[2 * i + 1], c[2 * i]);
    p[12] = c[24];
    const double q[7] = {fma(t2, p[1], p[0]),
                         fma(t2, p[3], p[2]),
                         fma(t2, p[5], p[4]),
                         fma(t2, p[7], p[6]),
                         fma(t2, p[9], p[8]),
                         fma(t2, p[11], p[10]),
                         p[12]};
    const double r[4] = {fma(t4, q[1], q[0]), fma(t4, q[3], q[2]), fma(t4, q[5], q[4]), q[6]};
    return fma(t, fma(t16, fma(t8, r[3], r[2]), fma(t8, r[1], r[0])), kErfcxG[0]);
}

// erfcx(a) + erfcx(b) and erfcx(a) - erfcx(b) for 0 <= a < b = a + delta (delta passed exactly), on
// the host. The difference without cancellation, however close a and b: with y = 1 + 2x and
// d = 1 - t, t_b - t_a = delta d_a d_b / 7, so (y_b = y_a + 2 delta)
//   erfcx(a) - erfcx(b) = (g_a y_b - g_b y_a) / (y_a y_b) = delta (2 g_a - y_a d_a d_b D / 7) / (y_a y_b),
// where D = (g_b - g_a) / (t_b - t_a), g's divided difference, comes from Horner's scheme at t_a
// over Horner's at t_b (which gives g_b); the bracket's second term is at most a few tenths of
// the first. 1 / y as 0.5 / (x + 0.5), which stays finite up to x = inf (delta / y_b <= 1/2).
// (The GPU, with CUDA's erfcx, integrates the difference where it cancels instead.)
struct ErfcxPair {
    double sum, difference;
};
inline ErfcxPair erfcx_pair(double a, double b, double delta) {
    const ErfcxVariable va = erfcx_variable(a), vb = erfcx_variable(b);
    const double ga = erfcx_g(va.t);
    double gb = kErfcxG[25], slope = 0.0;
    HPCML_UNROLL(25)
    for (int k = 24; k >= 0; --k) {
        slope = fma(slope, va.t, gb);
        gb = fma(gb, vb.t, kErfcxG[k]);
    }
    const double inv_ya = 0.5 / (a + 0.5), inv_yb = 0.5 / (b + 0.5);
    return {fma(ga, inv_ya, gb * inv_yb), delta * inv_yb * (2.0 * ga - va.yd * vb.d * slope * (1.0 / 7.0)) * inv_ya};
}

}  // namespace hpcml::detail::invgauss
