// The public regret-matching entry points: argument checks, backend choice, batching.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "common/dispatch.hpp"
#include "common/error.hpp"
#include "backends.hpp"
#include "math.hpp"

namespace hpcml {

std::string_view to_string(RegretVariant variant) noexcept {
    return detail::name_in(detail::regret::kVariantNames, variant);
}
std::string_view to_string(Averaging averaging) noexcept {
    return detail::name_in(detail::regret::kAveragingNames, averaging);
}

RegretVariant parse_regret_variant(std::string_view text, std::string_view argument) {
    return detail::parse_in(detail::regret::kVariantNames, text, argument);
}

Averaging parse_averaging(std::string_view text, std::string_view argument) {
    return detail::parse_in(detail::regret::kAveragingNames, text, argument);
}

std::vector<std::string_view> regret_variant_names() { return detail::names_in(detail::regret::kVariantNames); }
std::vector<std::string_view> averaging_names() { return detail::names_in(detail::regret::kAveragingNames); }

namespace {

// The index of A's first non-finite entry, or count: chunks tested branch-free (vectorised,
// threaded), then the one chunk that failed, element by element. Testing each element in turn
// cost a 4096 x 4096 game as much as three of its iterations.
std::size_t first_non_finite(const float* A, std::size_t count) {
    constexpr std::size_t kChunk = std::size_t{1} << 16;
    const std::ptrdiff_t chunks = static_cast<std::ptrdiff_t>((count + kChunk - 1) / kChunk);
    std::size_t first = count;
#pragma omp parallel for schedule(static) reduction(min : first) if (chunks > 1)
    for (std::ptrdiff_t c = 0; c < chunks; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * kChunk, end = std::min(count, begin + kChunk);
        unsigned bad = 0;
        for (std::size_t k = begin; k < end; ++k) bad |= A[k] - A[k] != 0.0f;  // NaN for infinities and NaN
        if (bad)
            for (std::size_t k = begin; k < end; ++k)
                if (!std::isfinite(A[k])) {
                    first = std::min(first, k);
                    break;
                }
    }
    return first;
}

// The shape and the options; returns the number of payoffs.
std::size_t check_shape(std::size_t batch, std::size_t n1, std::size_t n2, const RegretOptions& o) {
    using detail::require;
    require(n1 > 0 && n2 > 0,
            "A: the payoff matrix is empty (" + std::to_string(n1) + " x " + std::to_string(n2) + ")");
    require(batch > 0, "A: the batch is empty");
    require(o.iterations >= 1, "iterations: must be >= 1, got " + std::to_string(o.iterations));
    require(o.record_every >= 0, "record_every: must be >= 0, got " + std::to_string(o.record_every));
    require(batch - 1 <= std::numeric_limits<std::uint64_t>::max() - o.first_game,
            "first_game: games " + std::to_string(o.first_game) + " + " + std::to_string(batch) +
                " pass the last game number (2^64 - 1)");
    return detail::checked_mul(detail::checked_mul(batch, n1, "A"), n2, "A");
}

void check(const float* A, std::size_t batch, std::size_t n1, std::size_t n2, const RegretOptions& o) {
    const std::size_t count = check_shape(batch, n1, n2, o);
    detail::require(A != nullptr, "A: null pointer");
    if (const std::size_t k = first_non_finite(A, count); k < count) {
        const std::size_t game = k / (n1 * n2), i = k % (n1 * n2) / n2, j = k % n2;
        detail::raise(ErrorKind::InvalidArgument,
                      "A: payoff " + std::string(batch > 1 ? "of game " + std::to_string(game) + " " : "") + "at (" +
                          std::to_string(i) + ", " + std::to_string(j) + ") is not finite");
    }
}

}  // namespace

bool simultaneous_updates(const RegretOptions& options) noexcept {
    return detail::regret::make_schedule(options).simultaneous;
}

bool eps_bound_valid(const RegretOptions& options) noexcept {
    return detail::regret::make_schedule(options).eps_bound_valid();
}

GameSolution solve_matrix_game(const float* A, std::size_t n1, std::size_t n2, const RegretOptions& options) {
    return solve_matrix_games(A, 1, n1, n2, options).front();
}

std::vector<GameSolution> solve_matrix_games(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                             const RegretOptions& options) {
    check(A, batch, n1, n2, options);
    std::vector<GameSolution> solutions(batch);
    detail::Progress progress(options, std::uint64_t{batch} * static_cast<std::uint64_t>(options.iterations));
    const RunStats stats = detail::dispatch(
        options,
        {.name = "solve_matrix_games",
         .methods = detail::regret::kMethods,
         .reports_progress = true,
         .shape = {batch, n1, n2}},
        [&](detail::MemoryTracker& tracker) {
            // A batch: games are split across threads. One game: its pass over A is, when large,
            // outside any OpenMP region (nested in the batch loop's inactive one, each of its
            // parallel regions cost about a millisecond).
            if (batch == 1) {
                solutions[0] = detail::regret::cpu_solve({A, n1, n2, 0}, options, n1 * n2 >= (std::size_t{1} << 16),
                                                         tracker, &progress);
                return;
            }
#pragma omp parallel for schedule(dynamic)
            for (std::size_t b = 0; b < batch; ++b) {
                solutions[b] = detail::regret::cpu_solve({A + b * n1 * n2, n1, n2, b}, options, false, tracker);
                progress.add(
                    static_cast<std::uint64_t>(options.iterations));  // a game at a time: no atomic per iteration
            }
        },
        [&](const Context& context, detail::MemoryTracker& tracker) {
            solutions = detail::regret::cuda_solve(A, batch, n1, n2, options, context, tracker);
            progress.add(std::uint64_t{batch} * static_cast<std::uint64_t>(options.iterations));  // all at once
        });
    progress.finish();
    const bool valid = eps_bound_valid(options);
    for (GameSolution& s : solutions) {
        s.stats = stats;
        s.eps_bound_valid = valid;
    }
    return solutions;
}

namespace {
// The device entry point's result arrays, by name.
std::array<std::pair<const double*, const char*>, 5> device_results(const DeviceGameResults& out) {
    return {{{out.row_strategy, "row_strategy"},
             {out.col_strategy, "col_strategy"},
             {out.value, "value"},
             {out.gap, "gap"},
             {out.eps_bound, "eps_bound"}}};
}
}  // namespace

RunStats solve_matrix_games_device(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                   const DeviceGameResults& out, const RegretOptions& options, void* workspace,
                                   std::size_t workspace_bytes) {
    check_shape(batch, n1, n2, options);
    detail::require(A != nullptr, "A: null pointer");
    detail::require(options.record_every == 0,
                    "record_every: solve_matrix_games_device records no gap curve; use solve_matrix_games");
    detail::require_aligned(A, "A");
    for (const auto& [pointer, name] : device_results(out)) detail::require_aligned(pointer, name);
    return detail::dispatch(
        options,
        {.name = "solve_matrix_games_device",
         .takes_stream = true,
         .methods = detail::regret::kDeviceMethods,
         .device_memory = true,
         .shape = {batch, n1, n2}},
        [](detail::MemoryTracker&) {},
        [&](const Context& context, detail::MemoryTracker&) {
            detail::require_device_pointer(A, context.device, "A");
            for (const auto& [pointer, name] : device_results(out)) {
                detail::require(pointer != nullptr, std::string(name) + ": null pointer");
                detail::require_device_pointer(pointer, context.device, name);
            }
            if (const std::size_t needed = detail::regret::cuda_device_workspace(batch, n1, n2, context); needed > 0) {
                detail::require(workspace_bytes >= needed, "workspace: games of " + std::to_string(n1) + " x " +
                                                               std::to_string(n2) + " need " + std::to_string(needed) +
                                                               " bytes (solve_matrix_games_device_workspace), got " +
                                                               std::to_string(workspace_bytes));
                detail::require(workspace != nullptr, "workspace: null pointer");
                detail::require_device_pointer(workspace, context.device, "workspace");
                detail::require(reinterpret_cast<std::uintptr_t>(workspace) % 256 == 0,
                                "workspace: must be 256-byte aligned");
            }
            detail::regret::cuda_solve_device(A, batch, n1, n2, out, workspace, options, context);
        });
}

std::size_t solve_matrix_games_device_workspace(std::size_t batch, std::size_t n1, std::size_t n2,
                                                const RegretOptions& options) {
    check_shape(batch, n1, n2, options);
    if (std::max(n1, n2) <= detail::regret::kMaxBatchedActions) return 0;
    std::size_t bytes = 0;
    detail::dispatch(
        options,
        {.name = "solve_matrix_games_device_workspace",
         .takes_stream = true,
         .methods = detail::regret::kDeviceMethods,
         .device_memory = true},
        [](detail::MemoryTracker&) {},
        [&](const Context& context, detail::MemoryTracker&) {
            bytes = detail::regret::cuda_device_workspace(batch, n1, n2, context);
        });
    return bytes;
}

}  // namespace hpcml
