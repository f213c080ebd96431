// The inverse-Gaussian family as its backends see it: the elementwise and distance problems,
// and the backends' entry points (cpu.cpp; cuda_driver.cpp for the CUDA backend). No CUDA
// types: api.cpp includes it alone.
#pragma once

#include <hpcml/invgauss.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/memory.hpp"
#include "math.hpp"

namespace hpcml::detail::invgauss {

using hpcml::invgauss::DistanceOptions;
using hpcml::invgauss::Function;
using hpcml::invgauss::Metric;

// The per-element function f as a functor (x, mu, lam) -> value, usable on host and device.
// Float inputs are computed in double and rounded once: the formulas' exponents and erfcx
// differences would otherwise cost tens of float ulps, and the kernels are memory-bound.
template <class T, Function F>
struct Apply {
    HPCML_HD T operator()(T x, T m, T l) const {
        if constexpr (!std::is_same_v<T, double>) {
            return static_cast<T>(Apply<double, F>{}(x, m, l));
        } else {
            return evaluate(x, m, l);
        }
    }
    HPCML_HD static double evaluate(double x, double m, double l) {
        if constexpr (F == Function::Pdf) return pdf(x, m, l);
        if constexpr (F == Function::LogPdf) return logpdf(x, m, l);
        if constexpr (F == Function::Cdf) return cdf(x, m, l);
        if constexpr (F == Function::Sf) return sf(x, m, l);
        if constexpr (F == Function::LogCdf) return logcdf(x, m, l);
        if constexpr (F == Function::LogSf) return logsf(x, m, l);
        if constexpr (F == Function::Ppf) return ppf(x, m, l);
        if constexpr (F == Function::Standardize) return standardize(x, m, l);
        if constexpr (F == Function::StandardizedPdf) return standardized_pdf(x, m, l);
    }
};

// Calls visit(Apply<T, f>{}), turning the run-time choice into a compile-time one.
template <class T, class Visit>
void with_function(Function f, Visit&& visit) {
    switch (f) {
        case Function::Pdf:
            return visit(Apply<T, Function::Pdf>{});
        case Function::LogPdf:
            return visit(Apply<T, Function::LogPdf>{});
        case Function::Cdf:
            return visit(Apply<T, Function::Cdf>{});
        case Function::Sf:
            return visit(Apply<T, Function::Sf>{});
        case Function::LogCdf:
            return visit(Apply<T, Function::LogCdf>{});
        case Function::LogSf:
            return visit(Apply<T, Function::LogSf>{});
        case Function::Ppf:
            return visit(Apply<T, Function::Ppf>{});
        case Function::Standardize:
            return visit(Apply<T, Function::Standardize>{});
        case Function::StandardizedPdf:
            return visit(Apply<T, Function::StandardizedPdf>{});
    }
}

// Elementwise arguments: mu_step / lam_step are 1 (per element) or 0 (one value for all).
template <class T>
struct Elementwise {
    const T* x;
    std::size_t n;
    const T *mu, *lam;
    std::size_t mu_step, lam_step;
    T* out;
};

// The trapezoid grid of the distances.
struct Grid {
    double lo, step;
    std::size_t points;
    HPCML_HD double at(std::size_t g) const { return lo + step * static_cast<double>(g); }
    HPCML_HD double weight(std::size_t g) const { return g == 0 || g + 1 == points ? 0.5 * step : step; }
};

struct DistanceProblem {
    const double *mu, *lam;
    std::size_t pairs;
    Grid grid;
    bool tv, ks;
    double *total_variation, *kolmogorov;  // pairs each, when asked for
};

// CPU backend (cpu.cpp).
template <class T>
void cpu_evaluate(Function f, const Elementwise<T>& e);
template <class T>
void cpu_sample(const Elementwise<T>& e, std::uint64_t seed);  // e.x unused
void cpu_distances_fused(const DistanceProblem& p, MemoryTracker& tracker);
void cpu_distances_naive(const DistanceProblem& p, MemoryTracker& tracker);

// CUDA backend (cuda_driver.cpp; without CUDA, common/no_cuda.cpp raises NoDevice). Host
// arrays: copied in, computed, copied out.
template <class T>
void cuda_evaluate_host(Function f, const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count,
                        const Context& context, MemoryTracker& tracker);
template <class T>
void cuda_sample_host(const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count, std::uint64_t seed,
                      const Context& context, MemoryTracker& tracker);
// Device arrays, on context.stream.
template <class T>
void cuda_evaluate_device(Function f, const Elementwise<T>& e, const Context& context);
// Host parameters and results.
void cuda_distances(const DistanceProblem& p, Method method, const Context& context, MemoryTracker& tracker);

}  // namespace hpcml::detail::invgauss
