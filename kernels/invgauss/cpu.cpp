// The inverse Gaussian on the CPU: elementwise functions and sampling (threads over elements),
// and the distances to the normal, fused (threads over pairs, each reduced on the fly) and
// naive (the seed's broadcast: P x G matrices of densities and their difference, then a mean).
#include <algorithm>
#include <cmath>

#include "invgauss_impl.hpp"

namespace hpcml::detail::invgauss {

template <class T>
void cpu_evaluate(Function f, const Elementwise<T>& e) {
    with_function<T>(f, [&](auto fn) {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < e.n; ++i) e.out[i] = fn(e.x[i], e.mu[i * e.mu_step], e.lam[i * e.lam_step]);
    });
}

template <class T>
void cpu_sample(const Elementwise<T>& e, std::uint64_t seed) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < e.n; ++i)
        e.out[i] = static_cast<T>(sample(seed, i, static_cast<double>(e.mu[i * e.mu_step]), static_cast<double>(e.lam[i * e.lam_step])));
}

template void cpu_evaluate<float>(Function, const Elementwise<float>&);
template void cpu_evaluate<double>(Function, const Elementwise<double>&);
template void cpu_sample<float>(const Elementwise<float>&, std::uint64_t);
template void cpu_sample<double>(const Elementwise<double>&, std::uint64_t);

void cpu_distances_fused(const DistanceProblem& p, MemoryTracker& tracker) {
    // The normal's density and cdf on the grid are the same for every pair: G values each,
    // computed once (the P x G matrices are what fusion avoids, not these).
    HostBuffer<double> normal(tracker, 2 * p.grid.points, "normal on the grid");
    for (std::size_t g = 0; g < p.grid.points; ++g) {
        normal[g] = normal_pdf(p.grid.at(g));
        normal[p.grid.points + g] = normal_cdf(p.grid.at(g));
    }
    const double* phi = normal.data();
    const double* Phi = normal.data() + p.grid.points;
#pragma omp parallel for schedule(dynamic)
    for (std::size_t k = 0; k < p.pairs; ++k) {
        const Standardized s(p.mu[k], p.lam[k]);
        double tv = 0.0, ks = 0.0;
        for (std::size_t g = 0; g < p.grid.points; ++g) {
            const double y = p.grid.at(g);
            if (p.tv) tv += p.grid.weight(g) * std::fabs(s.pdf_minus_normal(y, phi[g]));
            if (p.ks) ks = std::max(ks, std::fabs(s.cdf_minus_normal(y, Phi[g])));
        }
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
        HostBuffer<double> ig(tracker, cells, "naive IG matrix"), normal(tracker, cells, "naive normal matrix"),
            diff(tracker, cells, "naive difference matrix");
        for (std::size_t k = 0; k < p.pairs; ++k)
            for (std::size_t g = 0; g < p.grid.points; ++g) ig[k * p.grid.points + g] = ig_value(p.grid.at(g), p.mu[k], p.lam[k]);
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
