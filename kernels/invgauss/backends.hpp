// The inverse-Gaussian family as its backends see it: the elementwise and distance problems,
// and the backends' entry points (cpu.cpp; cuda_driver.cpp for the CUDA backend). No CUDA
// types: api.cpp includes it alone.
#pragma once

#include <hpcml/invgauss.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/memory.hpp"
#include "common/names.hpp"
#include "math.hpp"
#include "quantile.hpp"

namespace hpcml::detail::invgauss {

using hpcml::invgauss::DistanceOptions;
using hpcml::invgauss::Function;
using hpcml::invgauss::Metric;

// The family's methods, for the common dispatch: the fused kernels, and for the distance to the
// normal the naive baseline (the seed's grid, materialised); the functions have no baseline.
inline constexpr std::array<Method, 2> kMethods{Method::Fused, Method::Naive};
inline constexpr std::span<const Method> kFunctionMethods{kMethods.data(), 1};

// The functions, one entry each: the public value, its name, whether it iterates (the quantile's
// solve: hundreds of ns per element on the CPU, where the others take a few), and its formula
// from math.hpp. Adding a function is an entry here and in Functions, plus its formula; every
// backend, the API and Python read this table.
template <Function F, bool Iterative = false>
struct FunctionEntry {
    static constexpr Function value = F;
    static constexpr bool iterative = Iterative;
};
struct PdfEntry : FunctionEntry<Function::Pdf> {
    static constexpr std::string_view name = "pdf";
    HPCML_HD static double apply(double x, double m, double l) { return pdf(x, m, l); }
};
struct LogPdfEntry : FunctionEntry<Function::LogPdf> {
    static constexpr std::string_view name = "logpdf";
    HPCML_HD static double apply(double x, double m, double l) { return logpdf(x, m, l); }
};
// The cdf family: apply_common (math.hpp's TailPass::Common) over every element, vectorised on the
// CPU, where it is complete; on the GPU, then apply_given over the few it left NaN with their
// far-tail quadrature, each spread over 8 lanes of its warp.
template <Function F, int Kind>
struct CdfFamilyEntry : FunctionEntry<F> {
    HPCML_HD static double apply(double x, double m, double l) { return cdf_family(Kind, x, m, l); }
    HPCML_HD static double apply_common(double x, double m, double l) {
        return cdf_family<double, TailPass::Common>(Kind, x, m, l);
    }
    HPCML_HD static double apply_given(double x, double m, double l, double quadrature) {
        return cdf_family<double, TailPass::Given>(Kind, x, m, l, quadrature);
    }
};
struct CdfEntry : CdfFamilyEntry<Function::Cdf, 0> {
    static constexpr std::string_view name = "cdf";
};
struct SfEntry : CdfFamilyEntry<Function::Sf, 1> {
    static constexpr std::string_view name = "sf";
};
struct LogCdfEntry : CdfFamilyEntry<Function::LogCdf, 2> {
    static constexpr std::string_view name = "logcdf";
};
struct LogSfEntry : CdfFamilyEntry<Function::LogSf, 3> {
    static constexpr std::string_view name = "logsf";
};
struct PpfEntry : FunctionEntry<Function::Ppf, true> {
    static constexpr std::string_view name = "ppf";
    HPCML_HD static double apply(double x, double m, double l) { return ppf(x, m, l); }
};
struct StandardizeEntry : FunctionEntry<Function::Standardize> {
    static constexpr std::string_view name = "standardize";
    HPCML_HD static double apply(double x, double m, double l) { return standardize(x, m, l); }
};
struct StandardizedPdfEntry : FunctionEntry<Function::StandardizedPdf> {
    static constexpr std::string_view name = "standardized_pdf";
    HPCML_HD static double apply(double x, double m, double l) { return standardized_pdf(x, m, l); }
};
using Functions = VariantTable<PdfEntry, LogPdfEntry, CdfEntry, SfEntry, LogCdfEntry, LogSfEntry, PpfEntry,
                               StandardizeEntry, StandardizedPdfEntry>;

inline constexpr std::array<Named<Metric>, 3> kMetricNames{
    {{Metric::TotalVariation, "tv"}, {Metric::Kolmogorov, "ks"}, {Metric::Both, "both"}}};

// An entry's function as a functor (x, mu, lam) -> value, usable on host and device. Float
// inputs are computed in double and rounded once: the formulas' exponents and erfcx
// differences would otherwise cost tens of float ulps, and the kernels are memory-bound.
template <class T, class Entry>
struct Apply {
    HPCML_HD T operator()(T x, T m, T l) const {
        return static_cast<T>(Entry::apply(static_cast<double>(x), static_cast<double>(m), static_cast<double>(l)));
    }
};

// Calls visit(Apply<T, entry of f>{}), turning the run-time choice into a compile-time one;
// false where f is no function of the table.
template <class T, class Visit>
bool with_function(Function f, Visit&& visit) {
    return Functions::visit(f, [&](auto entry) { visit(Apply<T, decltype(entry)>{}); });
}

// Whether f iterates (false for a value that is no function).
inline bool iterative(Function f) {
    bool result = false;
    Functions::visit(f, [&](auto entry) { result = decltype(entry)::iterative; });
    return result;
}

// Elementwise arguments: mu_step / lam_step are 1 (per element) or 0 (one value for all).
template <class T>
struct Elementwise {
    const T* x;
    std::size_t n;
    const T *mu, *lam;
    std::size_t mu_step, lam_step;
    T* out;
    // The stream index of element 0 (first_draw, plus a chunk's offset): the sampler's counter.
    std::uint64_t first = 0;
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
void cuda_evaluate_host(Function f, const Elementwise<T>& e, const Context& context, MemoryTracker& tracker);
template <class T>
void cuda_sample_host(const Elementwise<T>& e, std::uint64_t seed, const Context& context, MemoryTracker& tracker);
// Device arrays, on context.stream.
template <class T>
void cuda_evaluate_device(Function f, const Elementwise<T>& e, const Context& context);
template <class T>
void cuda_sample_device(const Elementwise<T>& e, std::uint64_t seed, const Context& context);
// Host parameters and results.
void cuda_distances(const DistanceProblem& p, Method method, const Context& context, MemoryTracker& tracker);

}  // namespace hpcml::detail::invgauss
