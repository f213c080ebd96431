// The inverse Gaussian's quantile (ppf), shared by the CPU and CUDA backends (HPCML_HD), in double.
#pragma once

#include "invgauss/math.hpp"

namespace hpcml::detail::invgauss {

// The quantile: x with F(x) = p. Solved for the smaller tail (F(x) = p for p <= 1/2, SF(x) = 1 - p
// otherwise) as g(t) = +-(log tail(e^t) - log target) = 0 in t = log x, where g is increasing.
// A bracket [lo, hi] narrows with every evaluation; a Newton step is taken when it lands inside
// and the tail's log is moderate (far in the tails log F ~ -lambda / 2x, and its derivative
// from the difference of two huge logs is meaningless), else the bracket is bisected, or
// stretched by 2 in t while one side is still open. Then polished by Newton in x.
//
// In steps, so that the CPU can take each over many elements at once (cpu.cpp: vectorised, in
// lock step); ppf takes them in turn for one element, as the GPU does. Each step computes every
// value and selects (a vector loop computes both sides of a branch anyway), and joins conditions
// with & and |: GCC 12 vectorises no select between two conditions, which && and || became.
inline constexpr int kQuantileSteps = 300, kPolishSteps = 3;  // at most

struct QuantileSetup {
    double m, l, c;  // the law solved for, X / c ~ IG(m, l); c = 1 where it is not scaled
    double log_target;
    bool upper;  // solved for the sf
    double t;    // the start: the bulk's scale
};

// false where p needs no solve: its quantile is then `value`.
HPCML_HD inline bool quantile_setup(double p, double mu, double lam, QuantileSetup& s, double& value) {
    value = quiet_nan<double>();
    if (!valid(mu, lam) || !(p >= 0 && p <= 1)) return false;
    if (p == 0 || p == 1) {
        value = p == 0 ? 0.0 : infinity<double>();
        return false;
    }
    s.upper = p > 0.5;
    s.log_target = s.upper ? log1p(-p) : log(p);
    // Solved for X / c ~ IG(mu / c, lambda / c) with c = min(mu, lambda), the scale of the bulk
    // (near mu for a narrow law, near lambda for a wide one), where that law's other parameter is
    // finite: t = log(x / c) is then near 0 where the mass is, and its spacing there is an ulp of
    // x (at t = log 1e-127 = -292 it was 250 ulps of x).
    const bool scaled = fmax(mu, lam) / fmin(mu, lam) < HUGE_VAL;
    // lambda / mu past the doubles: sd / mu = sqrt(mu / lambda) < 1e-154, every quantile is mu.
    if (!scaled && lam > mu) {
        value = mu;
        return false;
    }
    s.c = scaled ? fmin(mu, lam) : 1.0;
    s.m = mu / s.c;
    s.l = lam / s.c;
    s.t = log(fmin(s.m, s.l));  // 0 when scaled
    return true;
}

struct QuantileBracket {
    double lo, hi, t;
};

// One step of the solve in t; true when it has converged (t is then the solution).
template <TailPass Pass>
HPCML_HD inline bool quantile_step(QuantileBracket& b, const QuantileSetup& s) {
    const double x = exp(b.t);
    const double log_tail = cdf_family<double, Pass>(s.upper ? 3 : 2, x, s.m, s.l);
    const double g = (s.upper ? -1.0 : 1.0) * (log_tail - s.log_target);
    const double lo = g < 0 ? b.t : b.lo, hi = g < 0 ? b.hi : b.t;
    // d/dt log F(e^t) = x f(x) / F(x); for the sf, -x f(x) / SF(x): so dg/dt = x f / tail.
    const double slope = exp(b.t + logpdf(x, s.m, s.l) - log_tail);
    const double newton = b.t - g / slope;
    const double fallback = lo == -HUGE_VAL ? hi - 2.0 : (hi == HUGE_VAL ? lo + 2.0 : 0.5 * (lo + hi));
    const bool trusted = (fabs(log_tail) < 600) & (slope > 0) & (slope < HUGE_VAL);
    const double next = (trusted & (newton > lo) & (newton < hi)) ? newton : fallback;
    // t = log x, so an absolute step of 2e-16 is an ulp of x; a bracket at the spacing of
    // the doubles near t stops when its midpoint is t again. A Newton step that rounds to t
    // itself has converged too: it would fall on the bracket's end, and the bisection that
    // followed came back to the same t after 30 to 55 more steps (1% of the elements).
    const bool settled = (g == 0) | (trusted & (newton == b.t));
    const bool converged = settled | (fabs(next - b.t) <= 2e-16) | (hi - lo <= 2e-16);
    b = {lo, hi, settled ? b.t : next};
    return converged;
}

// The polish, in x itself: the spacing of t is |t| eps, coarser than an ulp of x in the tails. A
// step is kept only where it brings the tail closer to its target.
struct QuantilePolish {
    double x, g;  // the point and its tail's signed distance to the target
};

template <TailPass Pass>
HPCML_HD inline double quantile_residual(double x, double p, double mu, double lam) {
    const bool upper = p > 0.5;
    const double target = upper ? 1.0 - p : p;  // exact for p > 1/2
    return (upper ? -1.0 : 1.0) * (cdf_family<double, Pass>(upper ? 1 : 0, x, mu, lam) - target);
}

template <TailPass Pass>
HPCML_HD inline QuantilePolish quantile_polish_start(double t, double c, double p, double mu, double lam) {
    const double x = c * exp(t);
    return {x, quantile_residual<Pass>(x, p, mu, lam)};
}

// One Newton step; true where none was taken (and none will be).
template <TailPass Pass>
HPCML_HD inline bool quantile_polish_step(QuantilePolish& q, double p, double mu, double lam) {
    const double next = q.x - q.g / pdf(q.x, mu, lam);
    const bool inside = (next > 0) & (next < HUGE_VAL);
    const double g_next = quantile_residual<Pass>(next, p, mu, lam);  // any next: cdf_family takes NaN, inf, <= 0
    const bool better = (q.g != 0) & inside & (fabs(g_next) < fabs(q.g));
    q = {better ? next : q.x, better ? g_next : q.g};
    return !better;
}

template <class T>
HPCML_HD inline T ppf(T p, T mu, T lam) {
    const double pd = p, m = mu, l = lam;
    QuantileSetup s;
    double value;
    if (!quantile_setup(pd, m, l, s, value)) return static_cast<T>(value);
    QuantileBracket b = {-HUGE_VAL, HUGE_VAL, s.t};
    for (int iteration = 0; iteration < kQuantileSteps && !quantile_step<TailPass::Branch>(b, s); ++iteration) {}
    QuantilePolish q = quantile_polish_start<TailPass::Branch>(b.t, s.c, pd, m, l);
    for (int step = 0; step < kPolishSteps && !quantile_polish_step<TailPass::Branch>(q, pd, m, l); ++step) {}
    return static_cast<T>(q.x);
}

}  // namespace hpcml::detail::invgauss
