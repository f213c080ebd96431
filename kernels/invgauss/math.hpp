// Inverse Gaussian IG(mu, lambda): numerically stable per-element formulas shared by the CPU
// and CUDA backends (HPCML_HD), in double or float.
//
// pdf    f(x) = sqrt(lambda / (2 pi x^3)) exp(-z1^2 / 2),   z1 = sqrt(lambda / x) (x / mu - 1)
// cdf    F(x) = Phi(z1) + exp(2 lambda / mu) Phi(-z2),      z2 = sqrt(lambda / x) (x / mu + 1)
// The textbook cdf overflows (exp(2 lambda / mu) = inf, times Phi(-z2) = 0) above lambda / mu
// ~ 355 in double and ~ 44 in float. Since 2 lambda / mu - z2^2 / 2 = -z1^2 / 2, the second
// term is 0.5 erfcx(z2 / sqrt 2) exp(-z1^2 / 2), and with Phi written through erfcx as well,
//   z1 < 0:  F  = 0.5 exp(-z1^2 / 2) [erfcx(-z1 / sqrt 2) + erfcx(z2 / sqrt 2)]     (no cancellation)
//   z1 >= 0: SF = 0.5 exp(-z1^2 / 2) [erfcx(z1 / sqrt 2) - erfcx(z2 / sqrt 2)]
// and the other tail is 1 minus that, so each side is computed where it is small.
// Invalid parameters (mu <= 0, lambda <= 0, NaN) give NaN, as SciPy does.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <Random123/philox.h>

#include "common/hd.hpp"
#include "invgauss/erfcx_cpu.hpp"

namespace hpcml::detail::invgauss {

template <class T>
struct Constants {
    static constexpr T sqrt2 = T(1.4142135623730950488);
    static constexpr T inv_sqrt2 = T(0.70710678118654752440);
    static constexpr T inv_sqrt_pi = T(0.56418958354775628695);
    static constexpr T log_sqrt_2pi = T(0.91893853320467274178);
    static constexpr T inv_sqrt_2pi = T(0.39894228040143267794);
    static constexpr T two_pi = T(6.2831853071795864769);
};

// std::numeric_limits is host-only under nvcc; the C macros work on both sides.
template <class T>
HPCML_HD inline T quiet_nan() {
    return static_cast<T>(NAN);
}
template <class T>
HPCML_HD inline T infinity() {
    return static_cast<T>(HUGE_VAL);
}
template <class T>
HPCML_HD inline T smallest_normal() {
    return sizeof(T) == sizeof(float) ? T(FLT_MIN) : T(DBL_MIN);
}

// sqrt(a / b) for positive a and b, also where a / b overflows or underflows (lambda / x with
// lambda = 1e296 and x = 1e-12 made the cdf NaN): one rounding less where the quotient is normal.
template <class T>
HPCML_HD inline T sqrt_ratio(T a, T b) {
    const T q = a / b;
    return q >= smallest_normal<T>() && q < infinity<T>() ? sqrt(q) : sqrt(a) / sqrt(b);
}

// erfcx(x) = exp(x^2) erfc(x), for x >= 0 (the only arguments the stable forms need): CUDA's
// on the GPU, the host's polynomial (erfcx_cpu.hpp) on the CPU.
HPCML_HD inline double erfcx_nonnegative(double x) {
#if defined(__CUDA_ARCH__)
    return ::erfcx(x);
#else
    return erfcx_g(erfcx_variable(x).t) / (1.0 + 2.0 * x);
#endif
}

// c ? a : b. On the host as bit operations: for a select between two arguments of one call
// GCC's vectoriser calls the function on both and selects the results (two vector logs for one).
template <class T>
HPCML_HD inline T select_exact(bool c, T a, T b) {
#if defined(__CUDA_ARCH__)
    return c ? a : b;
#else
    using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    const Bits mask = 0 - static_cast<Bits>(c);
    return __builtin_bit_cast(T, (__builtin_bit_cast(Bits, a) & mask) | (__builtin_bit_cast(Bits, b) & ~mask));
#endif
}

// -erfcx'(s) = 2 / sqrt(pi) - 2 s erfcx(s) > 0, for s >= 0. Directly below s = 2 (at most a
// factor 10 of cancellation); above, from Laplace's continued fraction
// erfc(s) = e^{-s^2} / sqrt(pi) / (s + T), T = (1/2) / (s + 1 / (s + (3/2) / (s + ...))), which gives
// -erfcx'(s) = (2 / sqrt(pi)) T / (s + T) without subtracting. T to 60 terms (enough at s = 2)
// as the ratio of its convergents A_k / B_k, by their forward recurrence scaled by s^-k:
// A_k = A_{k-1} + (k / 2s^2) A_{k-2}, positive terms (no cancellation), B_60 < 1e23 for s >= 2:
// multiply-adds and one division, where the backward evaluation divides 60 times (3x the time).
// Both forms computed and one selected, without branches (a warp's lanes do not diverge).
HPCML_HD inline double erfcx_slope(double s) {
    const double direct = 2.0 * Constants<double>::inv_sqrt_pi - 2.0 * s * erfcx_nonnegative(s);
    const double h = 0.5 / (s * s);
    double a0 = 0.0, a1 = 0.5 / s, b0 = 1.0, b1 = 1.0;  // A_{k-2}, A_{k-1}, B_{k-2}, B_{k-1} at k = 2
    HPCML_UNROLL(59)
    for (int k = 2; k <= 60; ++k) {
        const double c = k * h, ak = fma(c, a0, a1), bk = fma(c, b0, b1);
        a0 = a1, a1 = ak, b0 = b1, b1 = bk;
    }
    const double t = a1 / b1;
    return s < 2.0 ? direct : 2.0 * Constants<double>::inv_sqrt_pi * t / (s + t);
}

// erfcx(a) - erfcx(a + delta) for a >= 0, delta > 0 (delta passed exactly, not as b - a), where
// delta <= a / 2: there the plain difference of CUDA's erfcx cancels (the upper tail of the cdf far
// right of the mean, where (a + delta) / a = (x / mu + 1) / (x / mu - 1)), so the GPU takes the
// integral of -erfcx' over [a, a + delta] by 8-point Gauss-Legendre. (The host, whose erfcx is a
// polynomial, has the difference directly: erfcx_pair. The tests compare the two.)
HPCML_HD inline bool erfcx_difference_cancels(double a, double delta) { return delta <= 0.5 * a; }
// 8-point Gauss-Legendre on [-1, 1]: nodes -+node(k), weight(k), k < 4. Selects, not tables: a
// table indexed in a loop the GPU compiler keeps rolled lands in local memory.
HPCML_HD inline double gauss_legendre8_node(int k) {
    return k == 0   ? 0.18343464249564978
           : k == 1 ? 0.52553240991632899
           : k == 2 ? 0.79666647741362673
                    : 0.96028985649753618;
}
HPCML_HD inline double gauss_legendre8_weight(int k) {
    return k == 0   ? 0.36268378337836166
           : k == 1 ? 0.31370664587788688
           : k == 2 ? 0.22238103445337443
                    : 0.10122853629037706;
}
// -erfcx' at node j < 8 of the quadrature over [a, a + delta]: mid - half node(j) for j < 4,
// mid + half node(j - 4) above (the GPU gives each node of one quadrature its own lane).
HPCML_HD inline double erfcx_difference_node(double a, double delta, int j) {
    const double half = 0.5 * delta, mid = a + half, offset = half * gauss_legendre8_node(j % 4);
    return erfcx_slope(j < 4 ? mid - offset : mid + offset);
}
HPCML_HD inline double erfcx_difference(double a, double delta) {
    double sum = 0.0;
    HPCML_UNROLL(4)
    for (int k = 0; k < 4; ++k)
        sum +=
            gauss_legendre8_weight(k) * (erfcx_difference_node(a, delta, k) + erfcx_difference_node(a, delta, k + 4));
    return 0.5 * delta * sum;
}

template <class T>
HPCML_HD inline bool valid(T mu, T lam) {
    return mu > 0 && lam > 0 && mu < infinity<T>() && lam < infinity<T>();
}

// 0.5 log(lam / (2 pi x^3)): one log of one quotient where x^3 and the quotient are normal
// numbers; in logs where they are not (in double, x^3 overflows above ~5.6e102 and underflows
// below ~2.8e-103, which made pdf(1e-110; 1, 1) infinite). One log, of q or of x (log(lam) is
// loop-invariant): the CPU's vector loop computes both sides.
template <class T>
HPCML_HD inline T log_normaliser(T x, T lam) {
    const T x3 = x * x * x;
    const T q = lam / (Constants<T>::two_pi * x3);
    const bool normal =
        x3 >= smallest_normal<T>() && x3 < infinity<T>() && q >= smallest_normal<T>() && q < infinity<T>();
    const T log_q_or_x = log(select_exact(normal, q, x));
    return normal ? T(0.5) * log_q_or_x : T(0.5) * (log(lam) - T(3) * log_q_or_x) - Constants<T>::log_sqrt_2pi;
}

template <class T>
HPCML_HD inline T logpdf(T x, T mu, T lam) {
    if (!valid(mu, lam) || x != x) return quiet_nan<T>();
    if (x <= 0 || x == infinity<T>()) return -infinity<T>();
    const T z1 = sqrt_ratio(lam, x) * ((x - mu) / mu);  // x - mu is exact near the mean; x / mu - 1 is not
    return log_normaliser(x, lam) - T(0.5) * z1 * z1;
}

template <class T>
HPCML_HD inline T pdf(T x, T mu, T lam) {
    const T l = logpdf(x, mu, lam);
    return l != l ? l : exp(l);
}

// The tails: small = the smaller of cdf and sf, computed directly; lower = whether that is the cdf.
template <class T>
struct Tail {
    T small;
    bool lower;
    T half_bracket, half_square;  // small = half_bracket e^{-half_square}
    T finished;                   // 1, or NaN where the GPU's TailPass::Common leaves it to a second pass
    HPCML_HD T log_small() const { return log(half_bracket) - half_square; }
};

// The tail's erfcx arguments: a = |z1| / sqrt 2 and b = a + delta, with delta = b - a = (z2 - z1) /
// sqrt 2 = sqrt 2 r passed exactly (as a difference it would cancel).
struct TailArguments {
    double z1, a, b, delta;
};
HPCML_HD inline TailArguments tail_arguments(double x, double mu, double lam) {
    const double r = sqrt_ratio(lam, x);
    const double z1 = r * ((x - mu) / mu);
    const double z2 = r * ((x + mu) / mu);
    return {z1, fabs(z1) * Constants<double>::inv_sqrt2, z2 * Constants<double>::inv_sqrt2,
            Constants<double>::sqrt2 * r};
}

// How the GPU's tail gets the upper side's difference where it cancels (x >= 5 mu): Branch, its
// quadrature computed where needed; for the GPU's two passes, Common (every element; NaN there),
// then Given (the caller's quadrature, spread over a warp's lanes). On the host every pass is
// complete: erfcx_pair's difference does not cancel.
enum class TailPass { Branch, Common, Given };

template <TailPass Pass = TailPass::Branch>
HPCML_HD inline Tail<double> tail(double x, double mu, double lam, double quadrature = 0.0) {
    const TailArguments g = tail_arguments(x, mu, lam);
    Tail<double> t;
    t.lower = g.z1 < 0;
    t.finished = 1.0;
    t.half_square = 0.5 * g.z1 * g.z1;
    const double scale = exp(-t.half_square);  // first: the CPU's vector exp is a call, which spills what is live
#if defined(__CUDA_ARCH__)
    const double ea = erfcx_nonnegative(g.a), eb = erfcx_nonnegative(g.b);
    const bool cancels = !t.lower && erfcx_difference_cancels(g.a, g.delta);
    double bracket = t.lower ? ea + eb : ea - eb;
    if constexpr (Pass == TailPass::Branch) {
        if (cancels) bracket = erfcx_difference(g.a, g.delta);
    } else if constexpr (Pass == TailPass::Common) {
        bracket = cancels ? 1.0 : bracket;  // a placeholder in range for exp and log
        t.finished = cancels ? quiet_nan<double>() : 1.0;
    } else {
        if (cancels) bracket = quadrature;
    }
#else
    (void)quadrature;  // the host's difference does not cancel: every pass is complete
    const ErfcxPair e = erfcx_pair(g.a, g.b, g.delta);
    const double bracket = select_exact(t.lower, e.sum, e.difference);  // no branch for GCC to thread
#endif
    t.half_bracket = 0.5 * bracket;
    t.small = t.half_bracket * scale;
    return t;
}

// cdf_family's value where it needs no tail (outside): NaN for NaN x or invalid parameters, else
// at x <= 0 (the cdf 0) or x = inf (the cdf 1). In 64-bit masks: a branch here, or a && or ||,
// becomes paths that GCC copies its caller's code into, and bool logic meets selects between
// conditions; GCC 12 vectorises neither (the CPU's quantile steps).
struct CdfEdge {
    std::uint64_t outside;  // all ones or zero
    double value;
};
HPCML_HD inline std::uint64_t mask_of(bool c) { return 0 - static_cast<std::uint64_t>(c); }
HPCML_HD inline double select_masked(std::uint64_t mask, double a, double b) {
#if defined(__CUDA_ARCH__)
    return mask ? a : b;
#else
    return __builtin_bit_cast(
        double, (__builtin_bit_cast(std::uint64_t, a) & mask) | (__builtin_bit_cast(std::uint64_t, b) & ~mask));
#endif
}
HPCML_HD inline CdfEdge cdf_edge(bool upper, bool logs, double x, double mu, double lam) {
    const double inf = infinity<double>();
    const std::uint64_t valid_mask = mask_of(valid(mu, lam)), inside = valid_mask & mask_of(x > 0) & mask_of(x < inf);
    // The asked-for side has probability 1 at x <= 0 for the sf, at x = inf for the cdf.
    const std::uint64_t certain = mask_of(upper) ^ mask_of(x > 0);
    const double one = logs ? 0.0 : 1.0, zero = logs ? -inf : 0.0;
    return {~inside,
            select_masked(valid_mask & ~mask_of(x != x), select_masked(certain, one, zero), quiet_nan<double>())};
}

// kind: 0 cdf, 1 sf, 2 logcdf, 3 logsf. Pass and quadrature: as tail's.
template <class T, TailPass Pass = TailPass::Branch>
HPCML_HD inline T cdf_family(int kind, T x, T mu, T lam, double quadrature = 0.0) {
    const bool upper = kind == 1 || kind == 3, logs = kind >= 2;
    const CdfEdge edge = cdf_edge(upper, logs, x, mu, lam);
    if constexpr (Pass == TailPass::Branch) {
        if (edge.outside) return T(edge.value);
    }
    const Tail<double> t = tail<Pass>(x, mu, lam, quadrature);  // vectorised: outside too, then dropped
    const bool direct = t.lower != upper;                       // the asked-for side is the small one
    if constexpr (Pass == TailPass::Branch) {
        if (logs) return direct ? t.log_small() : log1p(-t.small);
        return direct ? t.small : T(1) - t.small;
    }
    // Vectorised, where both sides are computed: one log for both, log1p(-small) taken as
    // log(u) - ((u - 1) + small) / u with u = 1 - small rounded (the rounding's first-order
    // correction: about an ulp).
    const double u = 1.0 - t.small, log_either = log(select_exact(direct, t.half_bracket, u));
    const double value = logs ? (direct ? log_either - t.half_square : log_either - ((u - 1.0) + t.small) / u)
                              : (direct ? t.small : 1.0 - t.small);
    return T(select_masked(edge.outside, edge.value, value * t.finished));
}

template <class T>
HPCML_HD inline T cdf(T x, T mu, T lam) {
    return cdf_family(0, x, mu, lam);
}

// (x - mu) / sqrt(mu^3 / lambda)
template <class T>
HPCML_HD inline T standardize(T x, T mu, T lam) {
    if (!valid(mu, lam)) return quiet_nan<T>();
    return (x - mu) * sqrt_ratio(lam, mu) / mu;
}

// log f_Y(y) for Y = standardize(X), k = sqrt(lambda / mu):
// log phi(y) - 1.5 log1p(y / k) + y^3 / (2 (k + y)), written as
// -log sqrt(2 pi) - k y^2 / (2 (k + y)) - 1.5 log1p(y / k) so that no large terms cancel.
template <class T>
HPCML_HD inline T standardized_logpdf(T y, T mu, T lam) {
    if (!valid(mu, lam) || y != y) return quiet_nan<T>();
    const T k = sqrt_ratio(lam, mu);
    if (y <= -k || y == infinity<T>()) return -infinity<T>();
    return -Constants<T>::log_sqrt_2pi - k * y * y / (T(2) * (k + y)) - T(1.5) * log1p(y / k);
}

template <class T>
HPCML_HD inline T standardized_pdf(T y, T mu, T lam) {
    const T l = standardized_logpdf(y, mu, lam);
    return l != l ? l : exp(l);
}

HPCML_HD inline double normal_pdf(double y) { return exp(-0.5 * y * y - Constants<double>::log_sqrt_2pi); }
HPCML_HD inline double normal_cdf(double y) { return 0.5 * erfc(-y * Constants<double>::inv_sqrt2); }

// One parameter pair's constants for the distances: k = sqrt(lambda / mu), sd = sqrt(mu^3 / lambda).
struct Standardized {
    double mu, lam, k, inv_k, sd;
    HPCML_HD Standardized(double m, double l)
        : mu(m), lam(l), k(sqrt_ratio(l, m)), inv_k(sqrt_ratio(m, l)), sd(m * sqrt_ratio(m, l)) {}

    // f_Y(y) - phi(y) = phi(y) expm1(a), a = y^3 / (2 (k + y)) - 1.5 log1p(y / k): accurate when
    // close. Where a >= 1 the difference has no cancellation and f_Y is taken from its own
    // logarithm, which stays finite where phi underflows and exp(a) overflows (y beyond ~38).
    HPCML_HD double pdf_minus_normal(double y, double phi) const {
        if (y <= -k) return -phi;
        const double a = y * y * y / (2.0 * (k + y)) - 1.5 * log1p(y * inv_k);
        return a < 1.0 ? phi * expm1(a) : standardized_pdf(y, mu, lam) - phi;
    }
    // F_Y(y) - Phi(y), F_Y(y) = F(mu + y sd).
    HPCML_HD double cdf_minus_normal(double y, double Phi) const { return cdf(mu + y * sd, mu, lam) - Phi; }
};

// Michael-Schucany-Haas on Philox4x32-10 draws for element `index`: two uniforms for a
// Box-Muller normal nu, one for the acceptance test. In the form without cancellation:
// t = |nu| sqrt(mu / lambda), r = 2 / (t + sqrt(t^2 + 4)); mu r^2 if U (1 + r^2) <= 1, else mu / r^2.
// For valid parameters: the CPU's vector loop, behind the API's check (GCC 12 left the loop
// scalar with sample's NaN select in it).
HPCML_HD inline double sample_valid(std::uint64_t seed, std::uint64_t index, double mu, double lam) {
    r123::Philox4x32 philox;
    const r123::Philox4x32::ctr_type counter = {
        {static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32), 0u, 0u}};
    const r123::Philox4x32::key_type key = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const r123::Philox4x32::ctr_type bits = philox(counter, key);
    const double u1 = (static_cast<double>(bits[0]) + 1.0) * 0x1p-32;  // (0, 1]: log is finite
    const double u2 = static_cast<double>(bits[1]) * 0x1p-32;
    const double u = (static_cast<double>(bits[2]) + 0.5) * 0x1p-32;
    const double nu = sqrt(-2.0 * log(u1)) * cos(Constants<double>::two_pi * u2);
    const double t = fabs(nu) * sqrt(mu / lam);
    const double r = 2.0 / (t + sqrt(t * t + 4.0));
    return u * (1.0 + r * r) <= 1.0 ? mu * r * r : mu / (r * r);
}

HPCML_HD inline double sample(std::uint64_t seed, std::uint64_t index, double mu, double lam) {
    return valid(mu, lam) ? sample_valid(seed, index, mu, lam) : quiet_nan<double>();
}

}  // namespace hpcml::detail::invgauss
