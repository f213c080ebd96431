// The regret-matching family as its backends see it: the game, and the backends' entry points
// (cpu.cpp; cuda_driver.cpp for the CUDA backend). No CUDA types: api.cpp includes it alone.
#pragma once

#include <hpcml/regret.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/memory.hpp"
#include "common/progress.hpp"

namespace hpcml::detail::regret {

// The family's methods, for the common dispatch: the fused solvers and the naive baseline (the
// seed's loop of tensor operations); the device entry points have no baseline.
inline constexpr std::array<Method, 2> kMethods{Method::Fused, Method::Naive};
inline constexpr std::span<const Method> kDeviceMethods{kMethods.data(), 1};

// The CPU's pass over A goes by tiles of kTileRows x kTileColumns (cpu.cpp); a game within one
// tile is summed in the order the GPU's batched kernel reproduces (cuda_launchers.hpp checks it):
// an order, fixed for every machine. Whole 4096-column rows beat 1024-column pieces, which made
// the prefetcher start over (Zen 4, b3b6fb0); 64 rows were not timed against others.
constexpr std::size_t kTileRows = 64;
constexpr std::size_t kTileColumns = 4096;  // 16 KiB of each row

struct Game {
    const float* A = nullptr;  // n1 x n2, row-major
    std::size_t n1 = 0, n2 = 0;
    std::uint64_t index = 0;  // the game's number in its batch: keys the sampled draws
};

// CPU backend (cpu.cpp). Fused: simultaneous iterations read A once, by tiles, for both players'
// utilities; naive: two separate passes and fresh temporaries every iteration, as the seed's
// eager program. `parallel` splits one large game's tiles across threads (batches parallelise
// across games instead); results do not depend on it.
// progress, where not null, gets one unit per iteration.
GameSolution cpu_solve(const Game& game, const RegretOptions& options, bool parallel, MemoryTracker& tracker,
                       Progress* progress = nullptr);

// The exact Nash gap and value of a profile, with one pass over A.
struct Evaluation {
    double value = 0.0, gap = 0.0;
};
Evaluation evaluate(const Game& game, const double* x, const double* y, bool parallel, MemoryTracker& tracker);

// CUDA backend (cuda_driver.cpp; without CUDA, regret/no_cuda.cpp raises NoDevice): solves `batch` games of n1 x n2
// (host payoffs) on context's device.
std::vector<GameSolution> cuda_solve(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                     const RegretOptions& options, const Context& context, MemoryTracker& tracker);
// Payoffs and results on the device, queued on context.stream: games of at most
// kMaxBatchedActions actions by the batched kernel, larger ones by the large-game path in
// `workspace`, of cuda_device_workspace bytes.
constexpr std::size_t kMaxBatchedActions = 64;
std::size_t cuda_device_workspace(std::size_t batch, std::size_t n1, std::size_t n2, const Context& context);
void cuda_solve_device(const float* A, std::size_t batch, std::size_t n1, std::size_t n2, const DeviceGameResults& out,
                       void* workspace, const RegretOptions& options, const Context& context);

}  // namespace hpcml::detail::regret
