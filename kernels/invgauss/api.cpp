// The public inverse-Gaussian entry points: argument checks, backend choice.
#include <cmath>
#include <limits>
#include <string>

#include "backends.hpp"
#include "common/dispatch.hpp"
#include "common/error.hpp"
#include "common/names.hpp"

namespace hpcml::invgauss {

namespace {

using detail::invgauss::Elementwise;

template <class T>
Elementwise<T> make_elementwise(const T* x, std::size_t n, const T* mu, std::size_t mu_count, const T* lam,
                                std::size_t lam_count, T* out, bool needs_x) {
    using detail::require;
    auto count_ok = [n](std::size_t c) { return c == n || c == 1; };
    require(count_ok(mu_count),
            "mu: has " + std::to_string(mu_count) + " values; expected 1 or n = " + std::to_string(n));
    require(count_ok(lam_count),
            "lambda: has " + std::to_string(lam_count) + " values; expected 1 or n = " + std::to_string(n));
    if (n > 0) {
        require(!needs_x || x, "x: null pointer");
        require(mu && lam, std::string(mu ? "lambda" : "mu") + ": null pointer");
        require(out, "out: null pointer");
    }
    return {x,
            n,
            mu,
            lam,
            mu_count == 1 ? std::size_t{0} : std::size_t{1},
            lam_count == 1 ? std::size_t{0} : std::size_t{1},
            out};
}

// A sampling call's operands: its draws start at options.first_draw of the seed's stream.
template <class T>
Elementwise<T> sampling(std::size_t n, const T* mu, std::size_t mu_count, const T* lam, std::size_t lam_count, T* out,
                        const InvGaussOptions& options) {
    Elementwise<T> e = make_elementwise<T>(nullptr, n, mu, mu_count, lam, lam_count, out, false);
    detail::require(n == 0 || n - 1 <= std::numeric_limits<std::uint64_t>::max() - options.first_draw,
                    "first_draw: draws " + std::to_string(options.first_draw) + " + " + std::to_string(n) +
                        " pass the end of the generator's stream (2^64 draws)");
    e.first = options.first_draw;
    return e;
}

// The device entry points' operands, aligned for their elements, checked before any CUDA call.
template <class T>
void require_aligned_operands(const Elementwise<T>& e) {
    detail::require_aligned(e.x, "x");
    detail::require_aligned(e.mu, "mu");
    detail::require_aligned(e.lam, "lam");
    detail::require_aligned(e.out, "out");
}

// The batch APIs raise on invalid parameters (the elementwise ones give NaN instead).
template <class T>
void require_parameters(const T* values, std::size_t count, const char* name) {
    for (std::size_t i = 0; i < count; ++i)
        detail::require(std::isfinite(values[i]) && values[i] > 0,
                        std::string(name) + ": must be finite and > 0, got " + std::to_string(values[i]) + " at " +
                            std::to_string(i));
}

}  // namespace

static void check_function(Function f) {
    detail::require(detail::contains(detail::invgauss::Functions::names, f),
                    "function: not a valid hpcml::invgauss::Function (" + std::to_string(static_cast<int>(f)) + ")");
}

template <class T>
RunStats evaluate(Function f, const T* x, std::size_t n, const T* mu, std::size_t mu_count, const T* lam,
                  std::size_t lam_count, T* out, const InvGaussOptions& options) {
    check_function(f);
    const Elementwise<T> e = make_elementwise(x, n, mu, mu_count, lam, lam_count, out, true);
    return detail::dispatch(
        options,
        {.name = "evaluate", .takes_stream = true, .methods = detail::invgauss::kFunctionMethods, .shape = {n}},
        [&](detail::MemoryTracker&) { detail::invgauss::cpu_evaluate(f, e); },
        [&](const Context& context, detail::MemoryTracker& tracker) {
            detail::invgauss::cuda_evaluate_host(f, e, context, tracker);
        });
}

template <class T>
RunStats evaluate_device(Function f, const T* x, std::size_t n, const T* mu, std::size_t mu_count, const T* lam,
                         std::size_t lam_count, T* out, const InvGaussOptions& options) {
    check_function(f);
    const Elementwise<T> e = make_elementwise(x, n, mu, mu_count, lam, lam_count, out, true);
    require_aligned_operands(e);
    return detail::dispatch(
        options,
        {.name = "evaluate_device",
         .takes_stream = true,
         .methods = detail::invgauss::kFunctionMethods,
         .device_memory = true,
         .shape = {n}},
        [](detail::MemoryTracker&) {},
        [&](const Context& context, detail::MemoryTracker&) {
            detail::require_device_pointer(x, context.device, "x");
            detail::require_device_pointer(mu, context.device, "mu");
            detail::require_device_pointer(lam, context.device, "lam");
            detail::require_device_pointer(out, context.device, "out");
            detail::invgauss::cuda_evaluate_device(f, e, context);
        });
}

template <class T>
RunStats sample(std::size_t n, const T* mu, std::size_t mu_count, const T* lam, std::size_t lam_count,
                std::uint64_t seed, T* out, const InvGaussOptions& options) {
    const Elementwise<T> e = sampling<T>(n, mu, mu_count, lam, lam_count, out, options);
    require_parameters(mu, mu_count, "mu");
    require_parameters(lam, lam_count, "lambda");
    return detail::dispatch(
        options, {.name = "sample", .takes_stream = true, .methods = detail::invgauss::kFunctionMethods, .shape = {n}},
        [&](detail::MemoryTracker&) { detail::invgauss::cpu_sample(e, seed); },
        [&](const Context& context, detail::MemoryTracker& tracker) {
            detail::invgauss::cuda_sample_host(e, seed, context, tracker);
        });
}

template <class T>
RunStats sample_device(std::size_t n, const T* mu, std::size_t mu_count, const T* lam, std::size_t lam_count,
                       std::uint64_t seed, T* out, const InvGaussOptions& options) {
    const Elementwise<T> e = sampling<T>(n, mu, mu_count, lam, lam_count, out, options);
    require_aligned_operands(e);
    return detail::dispatch(
        options,
        {.name = "sample_device",
         .takes_stream = true,
         .methods = detail::invgauss::kFunctionMethods,
         .device_memory = true,
         .shape = {n}},
        [](detail::MemoryTracker&) {},
        [&](const Context& context, detail::MemoryTracker&) {
            detail::require_device_pointer(mu, context.device, "mu");
            detail::require_device_pointer(lam, context.device, "lam");
            detail::require_device_pointer(out, context.device, "out");
            detail::invgauss::cuda_sample_device(e, seed, context);
        });
}

Distances distance_to_normal(const double* mu, const double* lam, std::size_t pairs, const DistanceOptions& o) {
    using detail::require;
    require(pairs == 0 || (mu && lam), std::string(mu ? "lambda" : "mu") + ": null pointer");
    require_parameters(mu, pairs, "mu");
    require_parameters(lam, pairs, "lambda");
    require(std::isfinite(o.grid_min) && std::isfinite(o.grid_max) && o.grid_min < o.grid_max,
            "grid: needs finite grid_min < grid_max, got [" + std::to_string(o.grid_min) + ", " +
                std::to_string(o.grid_max) + "]");
    require(o.grid_points >= 2, "grid: needs at least 2 points, got " + std::to_string(o.grid_points));

    Distances d;
    const bool tv = o.metric != Metric::Kolmogorov, ks = o.metric != Metric::TotalVariation;
    if (tv) d.total_variation.resize(pairs);
    if (ks) d.kolmogorov.resize(pairs);
    const detail::invgauss::DistanceProblem p{
        mu,
        lam,
        pairs,
        {o.grid_min, (o.grid_max - o.grid_min) / static_cast<double>(o.grid_points - 1), o.grid_points},
        tv,
        ks,
        d.total_variation.data(),
        d.kolmogorov.data()};
    d.stats = detail::dispatch(
        o, {.name = "distance_to_normal", .methods = detail::invgauss::kMethods, .shape = {pairs, o.grid_points}},
        [&](detail::MemoryTracker& tracker) {
            if (o.method != Method::Naive) {
                detail::invgauss::cpu_distances_fused(p, tracker);
            } else {
                detail::invgauss::cpu_distances_naive(p, tracker);
            }
        },
        [&](const Context& context, detail::MemoryTracker& tracker) {
            detail::invgauss::cuda_distances(p, o.method, context, tracker);
        });
    return d;
}

std::vector<Function> functions() {
    std::vector<Function> all;
    for (const auto& entry : detail::invgauss::Functions::names) all.push_back(entry.value);
    return all;
}

std::string_view to_string(Function function) noexcept {
    return detail::name_in(detail::invgauss::Functions::names, function);
}
std::string_view to_string(Metric metric) noexcept { return detail::name_in(detail::invgauss::kMetricNames, metric); }

Function parse_function(std::string_view text, std::string_view argument) {
    return detail::parse_in(detail::invgauss::Functions::names, text, argument);
}

Metric parse_metric(std::string_view text, std::string_view argument) {
    return detail::parse_in(detail::invgauss::kMetricNames, text, argument);
}

#define HPCML_INSTANTIATE(T)                                                                                         \
    template RunStats evaluate<T>(Function, const T*, std::size_t, const T*, std::size_t, const T*, std::size_t, T*, \
                                  const InvGaussOptions&);                                                           \
    template RunStats evaluate_device<T>(Function, const T*, std::size_t, const T*, std::size_t, const T*,           \
                                         std::size_t, T*, const InvGaussOptions&);                                   \
    template RunStats sample<T>(std::size_t, const T*, std::size_t, const T*, std::size_t, std::uint64_t, T*,        \
                                const InvGaussOptions&);                                                             \
    template RunStats sample_device<T>(std::size_t, const T*, std::size_t, const T*, std::size_t, std::uint64_t, T*, \
                                       const InvGaussOptions&);
HPCML_INSTANTIATE(float)
HPCML_INSTANTIATE(double)
#undef HPCML_INSTANTIATE

}  // namespace hpcml::invgauss
