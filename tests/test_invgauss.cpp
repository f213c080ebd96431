// Inverse Gaussian: Boost.Math in its valid range, identities over lambda / mu from 1e-3 to 1e7
// (F(mu), cdf(ppf(p)) = p, the pdf integrates to 1, no inf or NaN), sampling moments and a
// Kolmogorov-Smirnov test, fused = naive distances and their sqrt(mu / lambda) decay, bad inputs.
#include <hpcml/invgauss.hpp>

#include <gtest/gtest.h>
#if HPCML_HAVE_BOOST_MATH
#include <boost/math/distributions/inverse_gaussian.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/errors.hpp"
#include "support/gpu.hpp"

#if HPCML_WITH_CUDA
#include <cuda_runtime.h>

#include <limits>
#include <type_traits>

#include "common/cuda_memory.hpp"
#include "invgauss/math.hpp"
#include "support/late_upload.hpp"
#endif

namespace {

using hpcml_test::expect_invalid;

namespace ig = hpcml::invgauss;
using ig::Function;

const ig::InvGaussOptions kCpu{hpcml::Backend::Cpu};

template <class T>
std::vector<T> eval(Function f, const std::vector<T>& x, T mu, T lam, const ig::InvGaussOptions& o = kCpu) {
    std::vector<T> out(x.size());
    ig::evaluate<T>(f, x.data(), x.size(), &mu, 1, &lam, 1, out.data(), o);
    return out;
}

template <class T>
T eval1(Function f, T x, T mu, T lam) {
    return eval<T>(f, {x}, mu, lam)[0];
}

double rel(double a, double b) { return b == 0 ? std::fabs(a) : std::fabs(a - b) / std::fabs(b); }

const double kRatios[] = {1e-3, 1e-2, 0.1, 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7};

// Tests of the laws themselves (identities, moments, fused = naive), run on every backend. The
// closed forms and Boost comparisons above check the host formulas; the GPU's arithmetic is
// compared with them element by element in InvGaussCuda.
class InvGaussOnBackend : public ::testing::TestWithParam<hpcml::Backend> {
protected:
    void SetUp() override { HPCML_SKIP_UNLESS_AVAILABLE(GetParam()); }
    ig::InvGaussOptions on() const { return ig::InvGaussOptions{GetParam()}; }
    template <class T>
    std::vector<T> ev(Function f, const std::vector<T>& x, T mu, T lam) const {
        return eval<T>(f, x, mu, lam, on());
    }
    template <class T>
    T e1(Function f, T x, T mu, T lam) const {
        return ev<T>(f, {x}, mu, lam)[0];
    }
};
INSTANTIATE_TEST_SUITE_P(, InvGaussOnBackend, ::testing::ValuesIn(hpcml_test::kBackends), hpcml_test::backend_name);

#if HPCML_HAVE_BOOST_MATH
TEST(InvGauss, MatchesBoostInItsValidRange) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> log_mu(-1, 1), log_ratio(-2, 2), u(0, 1);
    for (int trial = 0; trial < 300; ++trial) {
        const double mu = std::pow(10.0, log_mu(rng)), lam = mu * std::pow(10.0, log_ratio(rng));
        const boost::math::inverse_gaussian_distribution<double> d(mu, lam);
        const double x = boost::math::quantile(d, 0.001 + 0.998 * u(rng));
        EXPECT_LT(rel(eval1(Function::Pdf, x, mu, lam), boost::math::pdf(d, x)), 1e-12) << mu << " " << lam << " " << x;
        EXPECT_LT(rel(eval1(Function::Cdf, x, mu, lam), boost::math::cdf(d, x)), 1e-12) << mu << " " << lam << " " << x;
        EXPECT_LT(rel(eval1(Function::Sf, x, mu, lam), boost::math::cdf(boost::math::complement(d, x))), 1e-11);
        // Boost's quantile itself fails below lambda / mu ~ 0.1 (1e248 or NaN for p ~ 0.9, where
        // ours satisfies cdf(x) = p); it is compared where it works.
        const double p = 0.001 + 0.998 * u(rng);
        if (lam / mu >= 0.1)
            EXPECT_LT(rel(eval1(Function::Ppf, p, mu, lam), boost::math::quantile(d, p)), 1e-9)
                << mu << " " << lam << " " << p;
    }
}
#endif

TEST(InvGauss, CdfAtTheMeanHasAClosedForm) {
    // F(mu) = 1/2 + 1/2 erfcx(sqrt(2 lambda / mu)); erfcx in long double, or its asymptotic
    // series where erfc underflows even there.
    for (double r : kRatios) {
        const long double z = std::sqrt(2.0L * r);
        long double erfcx;
        if (z < 100) {
            erfcx = std::exp(z * z) * std::erfc(z);
        } else {
            const long double inv = 1 / (2 * z * z);
            erfcx = (1 - inv + 3 * inv * inv - 15 * inv * inv * inv) / (z * std::sqrt(3.14159265358979323846L));
        }
        const double expected = static_cast<double>(0.5L + 0.5L * erfcx);
        EXPECT_LT(rel(eval1(Function::Cdf, 2.0, 2.0, 2.0 * r), expected), 4e-16) << "lambda/mu " << r;
        EXPECT_LT(rel(eval1(Function::Sf, 2.0, 2.0, 2.0 * r), 1 - expected), 1e-13) << "lambda/mu " << r;
        EXPECT_LT(rel(eval1<float>(Function::Cdf, 2.0f, 2.0f, static_cast<float>(2.0 * r)), expected), 4e-7) << r;
    }
}

TEST_P(InvGaussOnBackend, WholeRangeFiniteAndQuantilesInvert) {
    const Function all[] = {Function::Pdf,    Function::LogPdf, Function::Cdf,         Function::Sf,
                            Function::LogCdf, Function::LogSf,  Function::Standardize, Function::StandardizedPdf};
    for (double r : kRatios)
        for (double mu : {1e-3, 1.0, 1e3}) {
            const double lam = mu * r;
            std::vector<double> p = {1e-300, 1e-12, 1e-3, 0.25, 0.5, 0.75, 0.999, 1 - 1e-12};
            const std::vector<double> x = ev(Function::Ppf, p, mu, lam);
            for (std::size_t k = 0; k < p.size(); ++k) {
                ASSERT_TRUE(std::isfinite(x[k]) && x[k] > 0) << "ppf " << p[k] << " lambda/mu " << r;
                const bool lower = p[k] <= 0.5;
                const double tail = lower ? e1(Function::Cdf, x[k], mu, lam) : e1(Function::Sf, x[k], mu, lam);
                const double target = lower ? p[k] : 1 - p[k];
                // x is exact to half an ulp at best: the tail's relative error is then
                // |d log tail / d log x| * 2^-53 (large for steep tails): allowed 18 ulps of that, plus 1e-14.
                const double slope = x[k] * e1(Function::Pdf, x[k], mu, lam) / tail;
                EXPECT_LT(rel(tail, target), 1e-14 + 4e-15 * slope) << "ppf(" << p[k] << ") lambda/mu " << r;
            }
            for (Function f : all) {
                for (double v : ev(f, x, mu, lam))
                    EXPECT_FALSE(std::isnan(v)) << static_cast<int>(f) << " lambda/mu " << r;
                const std::vector<float> xf(x.begin(), x.end());
                for (float v : ev<float>(f, xf, static_cast<float>(mu), static_cast<float>(lam)))
                    EXPECT_FALSE(std::isnan(v)) << "float " << static_cast<int>(f) << " lambda/mu " << r;
            }
            for (double v : ev(Function::Cdf, x, mu, lam)) EXPECT_TRUE(v >= 0 && v <= 1);
        }
}

TEST_P(InvGaussOnBackend, PdfIntegratesToOne) {
    for (double r : {0.01, 1.0, 100.0, 1e4, 1e7}) {
        const double mu = 1.5, lam = mu * r;
        const double lo = e1(Function::Ppf, 1e-14, mu, lam), hi = e1(Function::Ppf, 1 - 1e-14, mu, lam);
        // Trapezoid rule in t = log x: integral f(x) dx = integral f(e^t) e^t dt.
        const int n = 200000;
        std::vector<double> x(n + 1);
        for (int k = 0; k <= n; ++k) x[k] = std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * k / n);
        const std::vector<double> f = ev(Function::Pdf, x, mu, lam);
        double total = 0;
        for (int k = 0; k <= n; ++k) total += (k == 0 || k == n ? 0.5 : 1.0) * f[k] * x[k];
        total *= (std::log(hi) - std::log(lo)) / n;
        EXPECT_NEAR(total, 1.0, 1e-9) << "lambda/mu " << r;
    }
}

TEST_P(InvGaussOnBackend, InvalidParametersGiveNanAndNonPositiveXGivesZero) {
    const double nan = NAN, inf = INFINITY;
    for (auto [mu, lam] :
         {std::pair{0.0, 1.0}, std::pair{-1.0, 1.0}, std::pair{1.0, 0.0}, std::pair{nan, 1.0}, std::pair{1.0, inf}})
        EXPECT_TRUE(std::isnan(e1(Function::Cdf, 1.0, mu, lam)));
    EXPECT_EQ(e1(Function::Pdf, 0.0, 1.0, 1.0), 0.0);
    EXPECT_EQ(e1(Function::Pdf, -2.0, 1.0, 1.0), 0.0);
    EXPECT_EQ(e1(Function::Cdf, -2.0, 1.0, 1.0), 0.0);
    EXPECT_EQ(e1(Function::Sf, 0.0, 1.0, 1.0), 1.0);
    EXPECT_EQ(e1(Function::Cdf, inf, 1.0, 1.0), 1.0);
    EXPECT_TRUE(std::isnan(e1(Function::Ppf, 1.5, 1.0, 1.0)));
    EXPECT_EQ(e1(Function::Ppf, 0.0, 1.0, 1.0), 0.0);
}

TEST_P(InvGaussOnBackend, StandardizedPdfIsTheDensityOfTheStandardizedVariable) {
    for (double r : {0.5, 10.0, 1e5}) {
        const double mu = 0.7, lam = mu * r, sd = std::sqrt(mu * mu * mu / lam);
        for (double y : {-0.5, 0.0, 0.3, 2.0}) {
            const double x = mu + y * sd;
            if (x <= 0) continue;
            EXPECT_LT(rel(e1(Function::StandardizedPdf, y, mu, lam), sd * e1(Function::Pdf, x, mu, lam)), 1e-12);
            EXPECT_NEAR(e1(Function::Standardize, x, mu, lam), y, 1e-12);
        }
    }
}

TEST_P(InvGaussOnBackend, SamplesHaveTheRightLawAndAreReproducible) {
    const std::size_t n = 200000;
    for (auto [mu, lam] : {std::pair{1.0, 0.05}, std::pair{2.0, 3.0}, std::pair{0.5, 5000.0}}) {
        std::vector<double> s(n), again(n), other(n);
        ig::sample<double>(n, &mu, 1, &lam, 1, 42, s.data(), on());
        ig::sample<double>(n, &mu, 1, &lam, 1, 42, again.data(), on());
        ig::sample<double>(n, &mu, 1, &lam, 1, 43, other.data(), on());
        EXPECT_EQ(s, again);
        EXPECT_NE(s, other);
        double mean = 0;
        for (double v : s) {
            ASSERT_GT(v, 0.0);
            mean += v;
        }
        mean /= n;
        const double sd = std::sqrt(mu * mu * mu / lam);
        EXPECT_NEAR(mean, mu, 6 * sd / std::sqrt(double(n))) << mu << " " << lam;
        // Kolmogorov-Smirnov against hpcml's cdf (checked against Boost above): D < 1.95 / sqrt(n) (alpha 0.001).
        std::sort(s.begin(), s.end());
        const std::vector<double> F = ev(Function::Cdf, s, mu, lam);
        double d = 0;
        for (std::size_t k = 0; k < n; ++k) d = std::max({d, F[k] - double(k) / n, double(k + 1) / n - F[k]});
        EXPECT_LT(d, 1.95 / std::sqrt(double(n))) << mu << " " << lam;
        std::vector<float> f(n);
        const float muf = static_cast<float>(mu), lamf = static_cast<float>(lam);
        ig::sample<float>(n, &muf, 1, &lamf, 1, 42, f.data(), on());
        std::vector<double> fresh(n);
        ig::sample<double>(n, &mu, 1, &lam, 1, 42, fresh.data(), on());
        for (std::size_t k = 0; k < 100; ++k) EXPECT_LT(rel(f[k], fresh[k]), 1e-6);
    }
}

// A call's values do not depend on where its elements start and end (on the CPU: every element
// in a full vector lane): pieces of a call, at any offset and length, give its bits, for every
// function, both types, shared and per-element parameters.
template <class T>
void expect_pieces_equal_the_whole(const ig::InvGaussOptions& o) {
    const std::size_t n = 1000;
    std::vector<T> x(n), p(n), mu(n), lam(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<T>(0.01 + 0.007 * double(i)), p[i] = static_cast<T>((double(i) + 0.5) / double(n));
        mu[i] = static_cast<T>(0.3 + 0.01 * double(i % 97)), lam[i] = static_cast<T>(0.5 + double(i % 11));
    }
    for (Function f : {Function::Pdf, Function::LogPdf, Function::Cdf, Function::Sf, Function::LogCdf, Function::LogSf,
                       Function::Ppf, Function::Standardize, Function::StandardizedPdf}) {
        const std::vector<T>& in = f == Function::Ppf ? p : x;
        for (const bool per_element : {false, true}) {
            const std::size_t count = per_element ? n : 1;
            std::vector<T> whole(n), piece(n);
            ig::evaluate<T>(f, in.data(), n, mu.data(), count, lam.data(), count, whole.data(), o);
            for (std::size_t start = 0, size = 1; start < n; start += size, size = size * 2 + 3) {
                const std::size_t k = std::min(size, n - start), at = per_element ? start : 0;
                ig::evaluate<T>(f, in.data() + start, k, mu.data() + at, count == 1 ? 1 : k, lam.data() + at,
                                count == 1 ? 1 : k, piece.data() + start, o);
            }
            for (std::size_t i = 0; i < n; ++i)
                ASSERT_EQ(std::memcmp(&piece[i], &whole[i], sizeof(T)), 0)
                    << ig::to_string(f) << (per_element ? ", per element" : "") << ", element " << i << ": " << piece[i]
                    << " against " << whole[i];
        }
    }
}

TEST_P(InvGaussOnBackend, ValuesDoNotDependOnWhereACallsElementsStartAndEnd) {
    expect_pieces_equal_the_whole<double>(on());
    expect_pieces_equal_the_whole<float>(on());
}

// first_draw: pieces drawn at their offsets are one call's draws, per-element parameters
// included (element i of a piece takes the piece's own mu[i]); the stream's end is refused.
TEST_P(InvGaussOnBackend, SamplesDrawnInPiecesAreOneCallsDraws) {
    const std::size_t n = 10007;
    std::vector<double> mu(n), lam(n), whole(n), pieces(n);
    for (std::size_t i = 0; i < n; ++i) mu[i] = 0.5 + 0.001 * double(i % 977), lam[i] = 2.0 + double(i % 13);
    ig::sample<double>(n, mu.data(), n, lam.data(), n, 7, whole.data(), on());
    for (std::size_t start = 0, size = 1; start < n; start += size, size = size * 3 + 1) {
        const std::size_t count = std::min(size, n - start);
        ig::InvGaussOptions o = on();
        o.first_draw = start;
        ig::sample<double>(count, mu.data() + start, count, lam.data() + start, count, 7, pieces.data() + start, o);
    }
    EXPECT_EQ(pieces, whole);
    ig::InvGaussOptions o = on();
    o.first_draw = std::numeric_limits<std::uint64_t>::max() - 2;
    const double one = 1.0;
    std::vector<double> out(4);
    ig::sample<double>(3, &one, 1, &one, 1, 7, out.data(), o);  // the stream's last three draws
    for (int k = 0; k < 3; ++k) EXPECT_GT(out[k], 0.0);
    expect_invalid([&] { ig::sample<double>(4, &one, 1, &one, 1, 7, out.data(), o); }, "first_draw:");
}

TEST_P(InvGaussOnBackend, DistancesFusedEqualsNaiveAndDecayLikeSqrtMuOverLambda) {
    std::vector<double> mu, lam;
    for (double r : {1e2, 1e4, 1e6}) {
        mu.push_back(0.3);
        lam.push_back(0.3 * r);
    }
    ig::DistanceOptions o;
    o.backend = GetParam();
    const auto fused = ig::distance_to_normal(mu.data(), lam.data(), mu.size(), o);
    o.method = hpcml::Method::Naive;
    const auto naive = ig::distance_to_normal(mu.data(), lam.data(), mu.size(), o);
    for (std::size_t k = 0; k < mu.size(); ++k) {
        EXPECT_LT(rel(fused.total_variation[k], naive.total_variation[k]), 1e-9);
        EXPECT_LT(rel(fused.kolmogorov[k], naive.kolmogorov[k]), 1e-9);
    }
    for (std::size_t k = 1; k < mu.size(); ++k) {  // lambda / mu x100 -> distances x1/10
        EXPECT_NEAR(fused.total_variation[k] / fused.total_variation[k - 1], 0.1, 0.01);
        EXPECT_NEAR(fused.kolmogorov[k] / fused.kolmogorov[k - 1], 0.1, 0.01);
    }
    // The naive P x G matrices; the fused CPU keeps only the normal on the grid, whatever P.
    const auto peak = [&](const ig::Distances& d) {
        return GetParam() == hpcml::Backend::Cuda ? d.stats.memory.peak_device_bytes : d.stats.memory.peak_host_bytes;
    };
    EXPECT_GT(peak(naive), 3 * 3 * 2001 * sizeof(double) - 1);
    if (GetParam() == hpcml::Backend::Cpu) EXPECT_EQ(peak(fused), 2 * 2001 * sizeof(double));
    EXPECT_LT(peak(fused), peak(naive));
}

// The fused CPU loop forms f_Y / phi from exp, a division and a square root; the naive one from
// expm1 and log1p. They agree over the whole lambda / mu range, on grids that cross -k, with
// sizes that leave a remainder after the four-wide vectors.
TEST_P(InvGaussOnBackend, FusedTotalVariationMatchesNaiveOverTheWholeRange) {
    std::vector<double> mu, lam;
    for (double r : {1e-3, 0.5, 2.0, 37.0, 1e3, 1e5, 1e7}) {
        mu.push_back(0.7);
        lam.push_back(0.7 * r);
    }
    for (auto [lo, hi, points] : {std::tuple{-10.0, 10.0, std::size_t{1003}}, std::tuple{-3.0, 50.0, std::size_t{17}},
                                  std::tuple{-1e3, 1e3, std::size_t{6}}}) {
        ig::DistanceOptions o;
        o.backend = GetParam();
        o.metric = ig::Metric::TotalVariation;
        o.grid_min = lo, o.grid_max = hi, o.grid_points = points;
        const auto fused = ig::distance_to_normal(mu.data(), lam.data(), mu.size(), o);
        o.method = hpcml::Method::Naive;
        const auto naive = ig::distance_to_normal(mu.data(), lam.data(), mu.size(), o);
        for (std::size_t k = 0; k < mu.size(); ++k) {
            EXPECT_TRUE(std::isfinite(fused.total_variation[k])) << lam[k] / mu[k] << " grid " << points;
            EXPECT_LT(rel(fused.total_variation[k], naive.total_variation[k]), 1e-9)
                << lam[k] / mu[k] << " grid " << points;
        }
    }
}

TEST(InvGauss, NamesRoundTrip) {
    for (Function f : {Function::Pdf, Function::LogPdf, Function::Cdf, Function::Sf, Function::LogCdf, Function::LogSf,
                       Function::Ppf, Function::Standardize, Function::StandardizedPdf})
        EXPECT_EQ(ig::parse_function(ig::to_string(f)), f);
    for (ig::Metric m : {ig::Metric::TotalVariation, ig::Metric::Kolmogorov, ig::Metric::Both})
        EXPECT_EQ(ig::parse_metric(ig::to_string(m)), m);
    expect_invalid([] { ig::parse_function("pmf", "--function"); }, "--function: expected pdf, logpdf");
    expect_invalid([] { ig::parse_metric("l2"); }, "metric: expected tv, ks or both, got 'l2'");
}

TEST(InvGauss, BadArgumentsRaise) {
    const double good = 1.0, bad = -1.0;
    std::vector<double> x(4, 1.0), out(4), two(2, 1.0);
    expect_invalid([&] { ig::evaluate<double>(Function::Pdf, x.data(), 4, two.data(), 2, &good, 1, out.data(), kCpu); },
                   "mu:");
    expect_invalid([&] { ig::evaluate<double>(Function::Pdf, nullptr, 4, &good, 1, &good, 1, out.data(), kCpu); },
                   "x:");
    expect_invalid([&] { ig::sample<double>(4, &bad, 1, &good, 1, 0, out.data(), kCpu); }, "mu:");
    expect_invalid([&] { ig::sample<double>(4, &good, 1, &bad, 1, 0, out.data(), kCpu); }, "lambda:");
    ig::DistanceOptions o;
    o.backend = hpcml::Backend::Cpu;
    expect_invalid([&] { ig::distance_to_normal(&bad, &good, 1, o); }, "mu:");
    o.grid_points = 1;
    expect_invalid([&] { ig::distance_to_normal(&good, &good, 1, o); }, "grid:");
    o.grid_points = 10;
    o.grid_min = 3;
    o.grid_max = 3;
    expect_invalid([&] { ig::distance_to_normal(&good, &good, 1, o); }, "grid:");
}

// Misaligned device operands are refused before any CUDA call (a misaligned access in a kernel
// is a sticky error that would end every later GPU call of the process): runs on any machine.
TEST(InvGauss, DeviceEntryPointsRefuseMisalignedOperands) {
    alignas(16) static unsigned char memory[256];
    const auto* x = reinterpret_cast<const double*>(memory);
    const auto* odd = reinterpret_cast<const double*>(memory + 4);
    auto* out = reinterpret_cast<double*>(memory + 128);
    auto* odd_out = reinterpret_cast<double*>(memory + 132);
    ig::InvGaussOptions gpu;
    gpu.backend = hpcml::Backend::Cuda;
    expect_invalid([&] { ig::evaluate_device<double>(Function::Cdf, odd, 4, x, 1, x, 1, out, gpu); },
                   "x: its elements need 8-byte alignment, but the pointer is 4 bytes past");
    expect_invalid([&] { ig::evaluate_device<double>(Function::Cdf, x, 4, odd, 1, x, 1, out, gpu); }, "mu:");
    expect_invalid([&] { ig::evaluate_device<double>(Function::Cdf, x, 4, x, 1, odd, 1, out, gpu); }, "lam:");
    expect_invalid([&] { ig::evaluate_device<double>(Function::Cdf, x, 4, x, 1, x, 1, odd_out, gpu); }, "out:");
    expect_invalid([&] { ig::sample_device<double>(4, x, 1, x, 1, 0, odd_out, gpu); }, "out:");
    const auto* odd_float = reinterpret_cast<const float*>(memory + 2);
    expect_invalid(
        [&] {
            ig::evaluate_device<float>(Function::Pdf, odd_float, 4, reinterpret_cast<const float*>(memory), 1,
                                       reinterpret_cast<const float*>(memory), 1, reinterpret_cast<float*>(out), gpu);
        },
        "x: its elements need 4-byte");
}

TEST_P(InvGaussOnBackend, NaiveDistancesFailCleanlyWhenTooLarge) {
    std::vector<double> mu(100000, 1.0), lam(100000, 10.0);
    ig::DistanceOptions o;
    o.backend = GetParam();
    o.method = hpcml::Method::Naive;
    o.grid_points = 10000000;
    try {
        ig::distance_to_normal(mu.data(), lam.data(), mu.size(), o);
        FAIL() << "expected OutOfMemory";
    } catch (const hpcml::Error& e) {
        EXPECT_EQ(e.kind(), hpcml::ErrorKind::OutOfMemory);
        EXPECT_NE(std::string(e.what()).find("needs"), std::string::npos);
    }
}

#if HPCML_WITH_CUDA
// Per-element parameters over lambda / mu from 1e-3 to 1e7 (some invalid), x across each law
// (with 0, negatives, inf and NaN; probabilities for ppf), every function, float and double:
// the GPU equals the CPU to a few ulps of the type (NaN where the CPU has NaN, the same
// infinities), through host arrays and through device pointers on a user stream.
template <class T>
void expect_gpu_matches_cpu_per_element() {
    const std::size_t n = 20000;
    std::mt19937 rng(21);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<T> mu(n), lam(n), x(n), p(n);
    for (std::size_t k = 0; k < n; ++k) {
        const double m = std::pow(10.0, -3 + 6 * u(rng)), r = std::pow(10.0, -3 + 10 * u(rng));
        mu[k] = static_cast<T>(m);
        lam[k] = static_cast<T>(m * r);
        x[k] = static_cast<T>(m * std::pow(10.0, -3 + 6 * u(rng)));
        p[k] = static_cast<T>(u(rng));
    }
    const T specials[] = {
        0, -1, INFINITY, -INFINITY, NAN, std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max()};
    for (std::size_t k = 0; k < std::size(specials); ++k) x[k] = specials[k];
    const T probabilities[] = {0, 1, T(1e-30), 1 - std::numeric_limits<T>::epsilon(), NAN, T(-0.5), 2};
    for (std::size_t k = 0; k < std::size(probabilities); ++k) p[k] = probabilities[k];
    mu[100] = 0;  // invalid parameters give NaN on both
    lam[101] = -1;
    mu[102] = NAN;
    lam[103] = INFINITY;

    const ig::InvGaussOptions gpu{hpcml::Backend::Cuda};
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const hpcml::detail::DeviceArray<T> d_in(n, "x"), d_mu(mu.data(), n, "mu"), d_lam(lam.data(), n, "lambda"),
        d_out(n, "out");
    // Relative agreement, in ulps of T: libm's exp, log and erfcx differ by a few ulps between
    // the CPU and the GPU, amplified in the far tails and by ppf's Newton steps.
    const double tolerance = std::is_same_v<T, float> ? 8 * 0x1p-24 : 1e-12;
    const Function all[] = {Function::Pdf, Function::LogPdf,      Function::Cdf,
                            Function::Sf,  Function::LogCdf,      Function::LogSf,
                            Function::Ppf, Function::Standardize, Function::StandardizedPdf};
    for (Function f : all) {
        const std::vector<T>& in = f == Function::Ppf ? p : x;
        std::vector<T> host(n), device(n), via_pointers(n);
        ig::evaluate<T>(f, in.data(), n, mu.data(), n, lam.data(), n, host.data(), kCpu);
        ig::evaluate<T>(f, in.data(), n, mu.data(), n, lam.data(), n, device.data(), gpu);
        ig::InvGaussOptions on_stream = gpu;
        on_stream.stream = stream;
        {
            // x arrives on the stream behind a wait: a call that did not follow it would read NaN.
            const hpcml_test::LateUpload late(stream, d_in.data(), in.data(), n * sizeof(T));
            ig::evaluate_device<T>(f, d_in.data(), n, d_mu.data(), n, d_lam.data(), n, d_out.data(), on_stream);
        }
        d_out.download(via_pointers.data());
        for (std::size_t k = 0; k < n; ++k) {
            const double h = host[k];
            EXPECT_TRUE(via_pointers[k] == device[k] || (std::isnan(via_pointers[k]) && std::isnan(device[k])))
                << "device pointers " << static_cast<int>(f) << " element " << k;
            if (std::isnan(h)) {
                EXPECT_TRUE(std::isnan(device[k])) << static_cast<int>(f) << " element " << k;
            } else if (std::isinf(h) || h == 0) {
                EXPECT_EQ(device[k], host[k]) << static_cast<int>(f) << " element " << k;
            } else if (std::fabs(h) > 1e-290) {
                // logpdf crosses 0 (see AgreesWithCpu): an ulp of the log is absolute there.
                const double scale =
                    f == Function::LogPdf || f == Function::Standardize ? std::max(std::fabs(h), 1.0) : std::fabs(h);
                EXPECT_LT(std::fabs(device[k] - h) / scale, tolerance)
                    << static_cast<int>(f) << " element " << k << ": x " << in[k] << " mu " << mu[k] << " lambda "
                    << lam[k];
            }
        }
    }
    cudaStreamDestroy(stream);
}

TEST(InvGaussCuda, HostPointersToTheDeviceApiAreRefused) {
    HPCML_SKIP_WITHOUT_GPU();
    std::vector<double> host(4, 1.0);  // x = 1, mu = 1, lambda = 1
    const hpcml::detail::DeviceArray<double> dx(host.data(), 4, "x"), dout(4, "out");
    double *x = dx.data(), *out = dout.data();
    const ig::InvGaussOptions gpu{hpcml::Backend::Cuda};
    const double one = 1.0;
    expect_invalid([&] { ig::evaluate_device<double>(Function::Pdf, host.data(), 4, x, 1, x, 1, out, gpu); }, "x:");
    expect_invalid([&] { ig::evaluate_device<double>(Function::Pdf, x, 4, &one, 1, x, 1, out, gpu); }, "mu:");
    expect_invalid([&] { ig::evaluate_device<double>(Function::Pdf, x, 4, x, 1, x, 1, host.data(), gpu); }, "out:");
    ig::evaluate_device<double>(Function::Cdf, x, 4, x, 1, x, 1, out, gpu);  // the device still works
    dout.download(host.data());
    EXPECT_NEAR(host[3], eval1(Function::Cdf, 1.0, 1.0, 1.0), 1e-15);
}

// sample_device draws what sample draws on the GPU, on the caller's stream (mu arrives behind a
// wait), and gives NaN where a parameter on the device is invalid.
TEST(InvGaussCuda, SampleOnDevicePointersEqualsTheHostCall) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t n = 10007;  // not a multiple of any block
    std::vector<double> mu(n), lam(n), expected(n), drawn(n);
    for (std::size_t k = 0; k < n; ++k) {
        mu[k] = 0.5 + static_cast<double>(k % 7);
        lam[k] = 1.0 + 0.3 * static_cast<double>(k % 11);
    }
    const ig::InvGaussOptions gpu{hpcml::Backend::Cuda};
    ig::sample<double>(n, mu.data(), n, lam.data(), n, 42, expected.data(), gpu);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const hpcml::detail::DeviceArray<double> d_mu(n, "mu"), d_lam(lam.data(), n, "lambda"), d_out(n, "out");
    ig::InvGaussOptions on_stream = gpu;
    on_stream.stream = stream;
    {
        const hpcml_test::LateUpload late(stream, d_mu.data(), mu.data(), n * sizeof(double));
        ig::sample_device<double>(n, d_mu.data(), n, d_lam.data(), n, 42, d_out.data(), on_stream);
    }
    d_out.download(drawn.data());
    for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(drawn[k], expected[k]) << "element " << k;
    // The second half on its own, from its place in the stream.
    ig::InvGaussOptions second_half = on_stream;
    second_half.first_draw = n / 2;
    ig::sample_device<double>(n - n / 2, d_mu.data() + n / 2, n - n / 2, d_lam.data() + n / 2, n - n / 2, 42,
                              d_out.data(), second_half);
    d_out.download(drawn.data());
    for (std::size_t k = n / 2; k < n; ++k) ASSERT_EQ(drawn[k - n / 2], expected[k]) << "element " << k;

    mu[5] = -1.0;
    const hpcml::detail::DeviceArray<double> d_bad(mu.data(), n, "mu");
    ig::sample_device<double>(n, d_bad.data(), n, d_lam.data(), n, 42, d_out.data(), gpu);
    d_out.download(drawn.data());
    EXPECT_TRUE(std::isnan(drawn[5]));
    EXPECT_EQ(drawn[6], expected[6]);
    const double one = 1.0;
    expect_invalid([&] { ig::sample_device<double>(n, &one, 1, d_lam.data(), n, 42, d_out.data(), gpu); }, "mu:");
    cudaStreamDestroy(stream);
}

TEST(InvGaussCuda, PerElementParametersEveryFunctionDouble) {
    HPCML_SKIP_WITHOUT_GPU();
    expect_gpu_matches_cpu_per_element<double>();
}

TEST(InvGaussCuda, PerElementParametersEveryFunctionFloat) {
    HPCML_SKIP_WITHOUT_GPU();
    expect_gpu_matches_cpu_per_element<float>();
}

// The cdf family's far upper tail is finished per warp, four elements at a time on 8 lanes each:
// warps holding none, one, four, five and 32 tail elements, tail elements beside NaN and x <= 0,
// and a last warp cut short (n not a multiple of 32), against the CPU's two passes.
TEST(InvGaussCuda, FarTailSharedWithinAWarpEqualsTheCpu) {
    HPCML_SKIP_WITHOUT_GPU();
    const ig::InvGaussOptions gpu{hpcml::Backend::Cuda};
    const double bulk = 1.0, far = 40.0;  // IG(1, 1): x = 40 needs the quadrature, x = 1 does not
    std::vector<double> x(32 * 8 + 19, bulk);
    x[32 + 7] = far;                                                                    // warp 1: one
    for (int k : {0, 9, 18, 31}) x[64 + k] = far;                                       // warp 2: four
    for (int k : {1, 2, 3, 4, 30}) x[96 + k] = far;                                     // warp 3: five
    for (int k = 0; k < 32; ++k) x[128 + k] = 5.5 + k;                                  // warp 4: all 32
    for (int k = 0; k < 32; k += 2) x[160 + k] = far, x[161 + k] = k % 4 ? NAN : -1.0;  // warp 5: mixed
    for (int k = 0; k < 19; k += 3) x[256 + k] = far + k;                               // the short last warp
    const auto quadrature = [](double v) {  // whether x = v takes the far tail's quadrature (x >= 5 mu here)
        const auto g = hpcml::detail::invgauss::tail_arguments(v, 1.0, 1.0);
        return hpcml::detail::invgauss::erfcx_difference_cancels(g.a, g.delta);
    };
    ASSERT_TRUE(quadrature(far) && quadrature(5.5) && !quadrature(bulk));
    for (Function f : {Function::Cdf, Function::Sf, Function::LogCdf, Function::LogSf}) {
        const auto host = eval(f, x, 1.0, 1.0), device = eval(f, x, 1.0, 1.0, gpu);
        for (std::size_t k = 0; k < x.size(); ++k) {
            if (std::isnan(host[k])) {
                EXPECT_TRUE(std::isnan(device[k])) << static_cast<int>(f) << " " << k;
            } else if (host[k] != device[k]) {
                EXPECT_LT(std::fabs(device[k] - host[k]) / std::fabs(host[k]), 1e-12)
                    << static_cast<int>(f) << " " << k << " x = " << x[k];
            }
        }
    }
}

// Host arrays travel in pinned chunks of up to 2^20 elements on two streams: calls of two and a
// half chunks and of two whole ones, with per-element and broadcast parameters (a different
// broadcast value each call, so that a stale upload shows), in double and float, equal the CPU
// element by element, and their samples are the CPU's draws (each chunk's counter starts at its
// offset in the call).
template <class T>
void expect_chunked_host_calls_equal_the_cpu(std::size_t n, bool mu_each, bool lam_each, double broadcast) {
    const ig::InvGaussOptions gpu{hpcml::Backend::Cuda};
    std::vector<T> x(n), mu(mu_each ? n : 1, static_cast<T>(broadcast)),
        lam(lam_each ? n : 1, static_cast<T>(broadcast));
    for (std::size_t k = 0; k < n; ++k) {
        if (mu_each) mu[k] = static_cast<T>(0.5 + static_cast<double>(k % 1000) / 500.0);
        if (lam_each) lam[k] = static_cast<T>(1.0 + static_cast<double>(k % 777) / 100.0);
        x[k] = static_cast<T>(mu[mu_each ? k : 0] * std::pow(10.0, -1.0 + 2.0 * static_cast<double>((k * 7919) % n) /
                                                                              static_cast<double>(n)));
    }
    const double tolerance = std::is_same_v<T, float> ? 8 * 0x1p-24 : 1e-12;
    const std::string label = std::to_string(n) + (mu_each ? " mu each" : " mu broadcast") +
                              (lam_each ? " lambda each" : " lambda broadcast");
    for (Function f : {Function::Pdf, Function::Cdf}) {
        std::vector<T> host(n), device(n);
        ig::evaluate<T>(f, x.data(), n, mu.data(), mu.size(), lam.data(), lam.size(), host.data(), kCpu);
        ig::evaluate<T>(f, x.data(), n, mu.data(), mu.size(), lam.data(), lam.size(), device.data(), gpu);
        for (std::size_t k = 0; k < n; ++k)
            ASSERT_LT(rel(device[k], host[k]), tolerance) << label << " " << static_cast<int>(f) << " " << k;
    }
    std::vector<T> a(n), b(n);
    ig::sample<T>(n, mu.data(), mu.size(), lam.data(), lam.size(), 5, a.data(), kCpu);
    ig::sample<T>(n, mu.data(), mu.size(), lam.data(), lam.size(), 5, b.data(), gpu);
    const double sample_tolerance = std::is_same_v<T, float> ? tolerance : 1e-13;
    for (std::size_t k = 0; k < n; ++k) ASSERT_LT(rel(b[k], a[k]), sample_tolerance) << label << " " << k;
}

TEST(InvGaussCuda, HostArraysAcrossChunksEqualTheCpu) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t chunk = std::size_t{1} << 20;
    expect_chunked_host_calls_equal_the_cpu<double>(5 * chunk / 2 + 3, true, false, 2.0);
    expect_chunked_host_calls_equal_the_cpu<double>(2 * chunk, false, true, 1.3);
    expect_chunked_host_calls_equal_the_cpu<double>(3, true, false, 3.0);  // two slots of 2 and 1 elements
    expect_chunked_host_calls_equal_the_cpu<float>(3 * chunk + 1, true, true, 1.7);
}

TEST(InvGaussCuda, AgreesWithCpu) {
    HPCML_SKIP_WITHOUT_GPU();
    const ig::InvGaussOptions gpu{hpcml::Backend::Cuda};
    std::vector<double> x;
    for (int k = 1; k < 2000; ++k) x.push_back(std::pow(10.0, -3 + 6.0 * k / 2000));
    for (double r : kRatios)
        for (Function f : {Function::Pdf, Function::LogPdf, Function::Cdf, Function::Sf, Function::LogCdf,
                           Function::LogSf, Function::StandardizedPdf}) {
            const auto host = eval(f, x, 1.0, r), device = eval(f, x, 1.0, r, gpu);
            for (std::size_t k = 0; k < x.size(); ++k) {
                // logpdf = 0.5 log(...) - z1^2 / 2 crosses 0 (e.g. 6e-4 at r = 0.1, x = 0.0102): 1 ulp of CUDA's log is
                // absolute there.
                const double scale = f == Function::LogPdf ? std::max(std::fabs(host[k]), 1.0) : std::fabs(host[k]);
                if (std::fabs(host[k]) > 1e-290)
                    EXPECT_LT(std::fabs(device[k] - host[k]) / scale, 1e-12)
                        << static_cast<int>(f) << " " << r << " " << x[k];
            }
        }
    const double mu = 1.3, lam = 7.0;
    std::vector<double> a(100000), b(100000);
    ig::sample<double>(a.size(), &mu, 1, &lam, 1, 9, a.data(), kCpu);
    ig::sample<double>(b.size(), &mu, 1, &lam, 1, 9, b.data(), gpu);
    for (std::size_t k = 0; k < a.size(); ++k) ASSERT_LT(rel(b[k], a[k]), 1e-13) << k;
    std::vector<double> mus(50, 0.5), lams;
    for (int k = 0; k < 50; ++k) lams.push_back(0.5 * std::pow(10.0, -2 + 9.0 * k / 49));
    ig::DistanceOptions o;
    o.backend = hpcml::Backend::Cpu;
    const auto h = ig::distance_to_normal(mus.data(), lams.data(), mus.size(), o);
    o.backend = hpcml::Backend::Cuda;
    const auto d = ig::distance_to_normal(mus.data(), lams.data(), mus.size(), o);
    o.method = hpcml::Method::Naive;
    const auto n = ig::distance_to_normal(mus.data(), lams.data(), mus.size(), o);
    for (std::size_t k = 0; k < mus.size(); ++k) {
        EXPECT_LT(rel(d.total_variation[k], h.total_variation[k]), 1e-10);
        EXPECT_LT(rel(d.kolmogorov[k], h.kolmogorov[k]), 1e-10);
        EXPECT_LT(rel(n.total_variation[k], h.total_variation[k]), 1e-8);
    }
}
#endif

}  // namespace
