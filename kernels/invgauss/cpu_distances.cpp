// The inverse Gaussian's distances to the normal on the CPU: fused (threads over pairs, each
// reduced on the fly; the TV sum hand-vectorised for AVX2) and naive (the seed's broadcast: P x G
// matrices of densities and their difference, then a mean).
#include <algorithm>
#include <cmath>

#include "backends.hpp"
#include "common/cpu_kernel.hpp"
#include "libmvec.hpp"

namespace hpcml::detail::invgauss {

namespace {

#if HPCML_HAVE_LIBMVEC
// The TV sum of one pair, four grid points at a time. With w = k + y the exponents of f_Y and phi
// combine, f_Y = (k / w)^1.5 exp(-k y^2 / (2 w)) / sqrt(2 pi), which cannot overflow: one exp,
// one division and one square root per point (log1p and expm1 cost twice as much). f_Y - phi is
// then formed by subtraction, which costs at most an ulp of phi per point: an absolute error of
// ~1e-16 in a TV that is > 1e-4 wherever lambda / mu <= 1e7. Points with y <= -k lie outside
// the support (f_Y = 0, |f_Y - phi| = phi): they are summed first, and blended where a vector
// straddles -k.
[[gnu::target("avx2,fma")]] double tv_sum_avx2(const Standardized& s, const Grid& grid, const double* phi) {
    const std::size_t n = grid.points;
    std::size_t g = 1;  // the end points (weight h / 2) are added by the caller
    double outside = 0.0;
    for (; g + 1 < n && grid.at(g) <= -s.k; ++g) outside += phi[g];
    __m256d acc = _mm256_setzero_pd();
    const __m256d k = _mm256_set1_pd(s.k),
                  scaled_k_15 = _mm256_set1_pd(s.k * std::sqrt(s.k) * Constants<double>::inv_sqrt_2pi),
                  minus_k = _mm256_set1_pd(-s.k);
    const __m256d lanes = _mm256_set_pd(3, 2, 1, 0), step = _mm256_set1_pd(grid.step), lo = _mm256_set1_pd(grid.lo);
    const __m256d one = _mm256_set1_pd(1.0), minus_half_k = _mm256_set1_pd(-0.5 * s.k);
    const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    for (; g + 4 <= n - 1; g += 4) {
        const __m256d y = _mm256_fmadd_pd(_mm256_add_pd(_mm256_set1_pd(static_cast<double>(g)), lanes), step, lo);
        const __m256d p = _mm256_loadu_pd(phi + g);
        const __m256d inv_w = _mm256_div_pd(one, _mm256_add_pd(k, y));
        const __m256d exponent = _mm256_mul_pd(_mm256_mul_pd(minus_half_k, _mm256_mul_pd(y, y)), inv_w);
        const __m256d power = _mm256_mul_pd(_mm256_mul_pd(scaled_k_15, inv_w), _mm256_sqrt_pd(inv_w));
        const __m256d inside = _mm256_fmsub_pd(power, _ZGVdN4v_exp(exponent), p);
        const __m256d d = _mm256_blendv_pd(p, inside, _mm256_cmp_pd(y, minus_k, _CMP_GT_OQ));
        acc = _mm256_add_pd(acc, _mm256_and_pd(d, abs_mask));
    }
    alignas(32) double lanes_sum[4];
    _mm256_store_pd(lanes_sum, acc);
    double sum = outside + (lanes_sum[0] + lanes_sum[1]) + (lanes_sum[2] + lanes_sum[3]);
    for (; g + 1 < n; ++g) sum += std::fabs(s.pdf_minus_normal(grid.at(g), phi[g]));
    return sum * grid.step;
}
#endif

// The trapezoid sum's interior points (weight h), one at a time.
double tv_sum_baseline(const Standardized& s, const Grid& grid, const double* phi) {
    double sum = 0.0;
    for (std::size_t g = 1; g + 1 < grid.points; ++g) sum += std::fabs(s.pdf_minus_normal(grid.at(g), phi[g]));
    return sum * grid.step;
}

using TvInterior = double (*)(const Standardized&, const Grid&, const double*);
#if !HPCML_HAVE_LIBMVEC
constexpr TvInterior tv_sum_avx2 = nullptr;  // not built here
#endif

// The trapezoid sum of |f_Y - phi| for one pair.
double tv_sum(const Standardized& s, const Grid& grid, const double* phi, CpuKernel level) {
    const std::size_t last = grid.points - 1;
    const double ends =
        0.5 * grid.step *
        (std::fabs(s.pdf_minus_normal(grid.at(0), phi[0])) + std::fabs(s.pdf_minus_normal(grid.at(last), phi[last])));
    const TvInterior interior =
        best_kernel<TvInterior, 2>(level, {{{Avx2Level::value, tv_sum_avx2}, {BaselineLevel::value, tv_sum_baseline}}});
    return ends + interior(s, grid, phi);
}

}  // namespace

void cpu_distances_fused(const DistanceProblem& p, MemoryTracker& tracker) {
    // The normal's density and cdf on the grid are the same for every pair: G values each,
    // computed once (the P x G matrices are what fusion avoids, not these).
    HostBuffer<double> normal(tracker, 2 * p.grid.points, "normal on the grid");
    for (std::size_t g = 0; g < p.grid.points; ++g) {
        if (p.tv) normal[g] = normal_pdf(p.grid.at(g));
        if (p.ks) normal[p.grid.points + g] = normal_cdf(p.grid.at(g));
    }
    const double* phi = normal.data();
    const double* Phi = normal.data() + p.grid.points;
    const CpuKernel level = cpu_kernel_level();
#pragma omp parallel for schedule(dynamic)
    for (std::size_t k = 0; k < p.pairs; ++k) {
        const Standardized s(p.mu[k], p.lam[k]);
        const double tv = p.tv ? tv_sum(s, p.grid, phi, level) : 0.0;
        double ks = 0.0;
        if (p.ks)
            for (std::size_t g = 0; g < p.grid.points; ++g)
                ks = std::max(ks, std::fabs(s.cdf_minus_normal(p.grid.at(g), Phi[g])));
        if (p.tv) p.total_variation[k] = 0.5 * tv;
        if (p.ks) p.kolmogorov[k] = ks;
    }
}

void cpu_distances_naive(const DistanceProblem& p, MemoryTracker& tracker) {
    const std::size_t cells = checked_mul(p.pairs, p.grid.points, "distance grid");
    const std::size_t matrices = (p.tv ? 3 : 0) + (p.ks ? 3 : 0);  // IG, normal, difference per metric
    ensure_host_fits(checked_mul(cells, matrices * sizeof(double), "naive distances"),
                     "naive distances (P x G matrices of densities, cdfs and differences)");
    // The seed's steps, each materialising a P x G matrix; the normal's is broadcast over P.
    auto distance = [&](auto ig_value, auto normal_value, auto reduce, double* result) {
        HostBuffer<double> ig(tracker, cells, "naive IG matrix", HostBlock::Fresh),
            normal(tracker, cells, "naive normal matrix", HostBlock::Fresh),
            diff(tracker, cells, "naive difference matrix", HostBlock::Fresh);
        for (std::size_t k = 0; k < p.pairs; ++k)
            for (std::size_t g = 0; g < p.grid.points; ++g)
                ig[k * p.grid.points + g] = ig_value(p.grid.at(g), p.mu[k], p.lam[k]);
        for (std::size_t k = 0; k < p.pairs; ++k)
            for (std::size_t g = 0; g < p.grid.points; ++g) normal[k * p.grid.points + g] = normal_value(p.grid.at(g));
        for (std::size_t c = 0; c < cells; ++c) diff[c] = std::fabs(ig[c] - normal[c]);
        for (std::size_t k = 0; k < p.pairs; ++k) result[k] = reduce(diff.data() + k * p.grid.points);
    };
    if (p.tv) {
        distance([](double y, double m, double l) { return standardized_pdf(y, m, l); },
                 [](double y) { return normal_pdf(y); },
                 [&](const double* d) {
                     double s = 0.0;
                     for (std::size_t g = 0; g < p.grid.points; ++g) s += p.grid.weight(g) * d[g];
                     return 0.5 * s;
                 },
                 p.total_variation);
    }
    if (p.ks) {
        distance([](double y, double m, double l) { return cdf(m + y * m * std::sqrt(m / l), m, l); },
                 [](double y) { return normal_cdf(y); },
                 [&](const double* d) { return *std::max_element(d, d + p.grid.points); }, p.kolmogorov);
    }
}

}  // namespace hpcml::detail::invgauss
