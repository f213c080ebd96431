/// @file
/// The inverse Gaussian distribution IG(mu, lambda): density, cdf and tails, quantile,
/// standardisation, sampling and the distance of the standardised law to N(0, 1), on the CPU
/// and the GPU, stable over the whole parameter range (lambda / mu from 1e-3 to 1e7 and beyond).
///
/// Mean mu, variance mu^3 / lambda. SciPy's parameterisation: invgauss(mu / lambda, scale = lambda).
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

/// The inverse Gaussian IG(mu, lambda): elementwise functions, sampling and distances to the normal.
namespace hpcml::invgauss {

/// The elementwise functions of IG(mu, lambda) (mean mu, variance mu^3 / lambda) that evaluate computes.
enum class Function {
    Pdf,             ///< the density f(x) = sqrt(lambda / (2 pi x^3)) exp(-lambda (x - mu)^2 / (2 mu^2 x))
    LogPdf,          ///< log f(x), finite far into the tails where f underflows
    Cdf,             ///< F(x)
    Sf,              ///< 1 - F(x), accurate where it is tiny
    LogCdf,          ///< log F(x)
    LogSf,           ///< log(1 - F(x))
    Ppf,             ///< x is the probability p; returns x with cdf(x) = p
    Standardize,     ///< (x - mu) / sqrt(mu^3 / lambda)
    StandardizedPdf  ///< the density of Y = standardize(X) at y = x
};

/// backend, device and stream (the work is queued on it, host arrays too): ExecutionOptions
/// (core.hpp); the elementwise functions and sampling have the fused method only.
struct InvGaussOptions : ExecutionOptions {
    /// sample and sample_device: the index in the seed's stream of out[0]. Draw i of a call is
    /// draw first_draw + i of the stream, so a sequence drawn in pieces (a chunk per call, on
    /// any backend or worker) equals one call's. evaluate ignores it.
    std::uint64_t first_draw = 0;
};

/// out[i] = f(x[i], mu, lambda) for i < n, where mu is mu[i] (mu_count == n) or mu[0]
/// (mu_count == 1), and likewise lambda. Invalid parameters (mu <= 0, lambda <= 0, NaN, inf)
/// give NaN, as SciPy does; x <= 0 gives pdf 0 and cdf 0. T is float or double.
template <class T>
RunStats evaluate(Function f, const T* x, std::size_t n, const T* mu, std::size_t mu_count, const T* lam,
                  std::size_t lam_count, T* out, const InvGaussOptions& options = {});

/// The same on device pointers (CUDA): queued on options.stream, returns when complete, or at
/// once while that stream is being captured into a CUDA graph (the work is then the graph's).
template <class T>
RunStats evaluate_device(Function f, const T* x, std::size_t n, const T* mu, std::size_t mu_count, const T* lam,
                         std::size_t lam_count, T* out, const InvGaussOptions& options = {});

/// n samples by Michael-Schucany-Haas from a counter-based generator (Philox4x32-10): sample i
/// depends only on (seed, i, mu, lambda), so the same seed gives the same samples on the CPU and
/// the GPU (to the last bits of their libm's log, cos and sqrt). Invalid parameters throw.
template <class T>
RunStats sample(std::size_t n, const T* mu, std::size_t mu_count, const T* lam, std::size_t lam_count,
                std::uint64_t seed, T* out, const InvGaussOptions& options = {});

/// The same on device pointers (CUDA), as evaluate_device: queued on options.stream, no
/// allocation, returns when complete or at once while the stream is captured into a CUDA graph.
/// The parameters stay on the device unchecked: invalid ones give NaN samples. A captured call
/// replays with the seed it was captured with, so every replay draws the same samples.
template <class T>
RunStats sample_device(std::size_t n, const T* mu, std::size_t mu_count, const T* lam, std::size_t lam_count,
                       std::uint64_t seed, T* out, const InvGaussOptions& options = {});

/// Which distances distance_to_normal computes: total variation, Kolmogorov-Smirnov, or both.
enum class Metric { TotalVariation, Kolmogorov, Both };

/// backend, method and device: ExecutionOptions (core.hpp); no stream (the call synchronises).
struct DistanceOptions : ExecutionOptions {
    Metric metric = Metric::Both;  ///< the distances to compute
    /// The grid of the standardised variable y: grid_points evenly spaced points on
    /// [grid_min, grid_max]; TV = 1/2 integral |f_Y - phi| by the trapezoid rule, KS = the
    /// largest |F_Y - Phi| on the grid.
    double grid_min = -10.0;         ///< the grid's first point
    double grid_max = 10.0;          ///< the grid's last point (> grid_min)
    std::size_t grid_points = 2001;  ///< points of the grid, >= 2
};

/// distance_to_normal's result: one distance per parameter pair.
struct Distances {
    std::vector<double> total_variation;  ///< empty unless asked for
    std::vector<double> kolmogorov;       ///< empty unless asked for
    RunStats stats;                       ///< where and how the call ran
};

/// For P parameter pairs (mu[p], lambda[p]). Fused: each pair reduced on the fly, nothing of
/// size P x G stored. Naive: the seed's broadcast, materialising P x G matrices (checked against
/// free memory first: OutOfMemory with the bytes). Invalid parameters or grids throw.
Distances distance_to_normal(const double* mu, const double* lam, std::size_t pairs,
                             const DistanceOptions& options = {});

/// Every elementwise function, in the order of the library's table.
std::vector<Function> functions();

/// Names: "pdf", "logpdf", "cdf", "sf", "logcdf", "logsf", "ppf", "standardize",
/// "standardized_pdf"; metrics "tv", "ks", "both". parse_* throws InvalidArgument naming `argument`.
std::string_view to_string(Function function) noexcept;
/// The metric's name: "tv", "ks" or "both".
std::string_view to_string(Metric metric) noexcept;
/// The function named `text` (see to_string(Function)).
Function parse_function(std::string_view text, std::string_view argument = "function");
/// The metric named `text` (see to_string(Metric)).
Metric parse_metric(std::string_view text, std::string_view argument = "metric");

}  // namespace hpcml::invgauss
