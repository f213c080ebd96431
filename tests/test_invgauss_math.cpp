// The host's erfcx (a polynomial in t = (x - 3.5) / (x + 3.5)) and its pair of sum and difference
// against long double, and the difference against the quadrature the GPU takes where it cancels;
// the CPU's quantile in lock step against quantile.hpp's ppf element by element, as the GPU runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <hpcml/invgauss.hpp>

#include "invgauss/math.hpp"
#include "invgauss/quantile.hpp"

namespace {

using hpcml::detail::invgauss::erfcx_difference;
using hpcml::detail::invgauss::erfcx_nonnegative;
using hpcml::detail::invgauss::erfcx_pair;

constexpr double kEps = 0x1p-53;  // half an ulp of 1, relative

// exp(x^2) erfc(x) in long double, with x^2 split exactly into hi + lo (x is a double), or its
// asymptotic series past 100 (erfcl underflows past 106).
long double erfcx_reference(double x) {
    if (x > 100) {  // sum_k (-1)^k (2k - 1)!! / (2x^2)^k to k = 9 (the next term < 1e-31)
        const long double t = 1 / (2.0L * x * x);
        long double sum = 0, term = 1;
        for (int k = 1; k <= 10; ++k) sum += term, term *= -(2 * k - 1) * t;
        return sum / (x * std::sqrt(3.14159265358979323846L));
    }
    const double hi = x * x, lo = std::fma(x, x, -hi);
    return std::exp(static_cast<long double>(hi)) * std::exp(static_cast<long double>(lo)) *
           std::erfc(static_cast<long double>(x));
}

double relative(double got, long double expected) {
    return static_cast<double>(std::fabs((got - expected) / expected));
}

// 0, tiny values, a fine grid through the bulk and past erfc's underflow, and far out.
std::vector<double> arguments() {
    std::vector<double> x = {0.0, 1e-300, 1e-12, 26.0, 26.6, 1e3, 1e10, 1e200};
    for (double v = 1e-8; v < 1e4; v *= 1.01) x.push_back(v);
    for (double v = 0; v < 30; v += 0.0037) x.push_back(v);
    return x;
}

TEST(InvGaussMath, HostErfcxWithinFourHalfUlpsOfLongDouble) {
    double worst = 0;
    for (double x : arguments()) {
        const double e = relative(erfcx_nonnegative(x), erfcx_reference(x));
        worst = std::max(worst, e);
        EXPECT_LE(e, 4 * kEps) << "x = " << x;
    }
    EXPECT_EQ(erfcx_nonnegative(HUGE_VAL), 0.0);
    EXPECT_TRUE(std::isnan(erfcx_nonnegative(std::numeric_limits<double>::quiet_NaN())));
    std::printf("host erfcx: worst %.2f x 2^-53 relative\n", worst / kEps);
}

// erfcx(a) -+ erfcx(a + delta) over a from 1e-3 to 90 and delta / a from 1e-9 to 1e3: against
// long double where its own difference keeps double's digits (delta / a >= 1e-3: it loses at
// most 4 of its 19), and against the GPU's 8-point Gauss-Legendre where the difference cancels
// (delta <= a / 2), whose integrand the host's erfcx also feeds below s = 2.
TEST(InvGaussMath, HostErfcxPairHasNoCancellation) {
    for (double a = 1e-3; a < 90; a *= 1.07) {
        for (double ratio : {1e-9, 1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 1.0, 3.0, 10.0, 1e3}) {
            const double delta = a * ratio, b = a + delta;
            const auto pair = erfcx_pair(a, b, delta);
            const long double ea = erfcx_reference(a), eb = erfcx_reference(b);
            EXPECT_LE(relative(pair.sum, ea + eb), 4 * kEps) << a << " " << delta;
            if (ratio >= 1e-3) {
                // b is a + delta rounded: the reference is scaled from b - a to delta; its own
                // error is long double's (~5e-20) times the cancellation ea / (ea - eb).
                const long double exact_delta = static_cast<long double>(b) - a;
                const double tolerance = 8 * kEps + static_cast<double>(1e-18L * ea / (ea - eb));
                EXPECT_LE(relative(pair.difference, (ea - eb) * (delta / exact_delta)), tolerance) << a << " " << delta;
            }
            if (hpcml::detail::invgauss::erfcx_difference_cancels(a, delta))
                EXPECT_LE(std::fabs(pair.difference / erfcx_difference(a, delta) - 1), 1e-14) << a << " " << delta;
        }
    }
    // The far ends: 1 + 2b would overflow, and b = inf.
    const auto wide = erfcx_pair(0.0, 1.4e308, 1.4e308), far = erfcx_pair(1e300, 1.5e300, 5e299),
               infinite = erfcx_pair(HUGE_VAL, HUGE_VAL, 1.0);
    EXPECT_NEAR(wide.sum, 1.0, 1e-15);
    EXPECT_NEAR(wide.difference, 1.0, 1e-15);
    EXPECT_GT(far.difference, 0.0);
    EXPECT_LT(far.difference, far.sum);
    EXPECT_EQ(infinite.sum, 0.0);
    EXPECT_EQ(infinite.difference, 0.0);
}

// Per-element parameters over lambda / mu from 1e-3 to 1e7 (some invalid), probabilities with 0,
// 1, NaN and values out of [0, 1] among them, in a length that no block divides: the CPU's lock
// step (each block's elements packed as they converge; at the avx2 and avx512 levels of the
// ctest runs, below which the CPU too takes ppf element by element) agrees with ppf taken
// element by element to 1e-12 (the two evaluate the tail's logs differently, by about an ulp),
// and the special values are the same.
TEST(InvGaussMath, CpuQuantileInLockStepAgreesWithElementByElement) {
    const std::size_t n = 20011;
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<double> mu(n), lam(n), p(n), got(n);
    for (std::size_t k = 0; k < n; ++k) {
        mu[k] = std::pow(10.0, -3 + 6 * u(rng));
        lam[k] = mu[k] * std::pow(10.0, -3 + 10 * u(rng));
        p[k] = k % 7 == 0 ? std::pow(10.0, -300 * u(rng)) : u(rng);  // far lower tails too
    }
    const double specials[] = {0, 1, 1e-300, 1 - 1e-16, NAN, -0.5, 2, 0.5};
    for (std::size_t k = 0; k < std::size(specials); ++k) p[1000 + 3 * k] = specials[k];
    mu[2000] = 0, lam[2001] = -1, mu[2002] = NAN, lam[2003] = INFINITY, lam[2004] = 1e308, mu[2004] = 1e-300;
    hpcml::invgauss::InvGaussOptions cpu;
    cpu.backend = hpcml::Backend::Cpu;
    hpcml::invgauss::evaluate<double>(hpcml::invgauss::Function::Ppf, p.data(), n, mu.data(), n, lam.data(), n,
                                      got.data(), cpu);
    for (std::size_t k = 0; k < n; ++k) {
        const double expected = hpcml::detail::invgauss::ppf(p[k], mu[k], lam[k]);
        if (std::isnan(expected) || std::isinf(expected) || expected == 0)
            EXPECT_TRUE(got[k] == expected || (std::isnan(got[k]) && std::isnan(expected))) << k << " p " << p[k];
        else
            EXPECT_LE(std::fabs(got[k] / expected - 1), 1e-12)
                << k << " p " << p[k] << " mu " << mu[k] << " lam " << lam[k];
    }
}

}  // namespace
