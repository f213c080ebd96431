// The regret-matching CUDA backend's host side: the entry points, and the batched kernel's games
// (at most kMaxBatchedActions actions per player, in chunks of at most 2^20 games and about 1 GiB
// of payoffs); larger games go to the large-game path (cuda_large.cpp).
#include <algorithm>
#include <climits>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/nvtx.hpp"
#include "cuda_large.hpp"
#include "cuda_launchers.hpp"
#include "cuda_results.hpp"

namespace hpcml::detail::regret {

namespace {

bool batched(std::size_t n1, std::size_t n2) { return std::max(n1, n2) <= kMaxBatchedActions; }

std::vector<GameSolution> solve_batched(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                        const Schedule& sc, cudaStream_t stream, MemoryTracker& tracker) {
    std::vector<GameSolution> out(batch);
    const std::size_t chunk =
        std::clamp<std::size_t>(kGpu.chunk_bytes / (n1 * n2 * sizeof(float)), 1, std::min(batch, kGpu.chunk_games));
    DeviceBuffer<float> payoffs(tracker, chunk * n1 * n2, stream, "regret payoffs on device");
    ChunkResults results(tracker, chunk, n1, n2, sc.records(), stream);
    for (std::size_t first = 0; first < batch; first += chunk) {
        const std::size_t games = std::min(chunk, batch - first);
        const NvtxRange range([&] { return chunk_name("batched", first, games, batch); });
        upload_to_device(payoffs.data(), A + first * n1 * n2, games * n1 * n2 * sizeof(float), stream);
        launch_batched({payoffs.data(), static_cast<int>(games), static_cast<int>(n1), static_cast<int>(n2), first, sc,
                        results.rows.data(), results.cols.data(), results.value(), results.gap(), results.max_regret(),
                        results.curve.data()},
                       stream);
        results.unpack(out, first, games, sc, stream);
    }
    return out;
}

}  // namespace

std::size_t cuda_device_workspace(std::size_t batch, std::size_t n1, std::size_t n2, const Context& context) {
    require(n1 <= INT_MAX && n2 <= INT_MAX, "A: at most 2^31 - 1 actions per player on the GPU");
    if (batched(n1, n2)) return 0;
    const DeviceGuard guard(context.device);
    return large_device_workspace(batch, n1, n2, context.device);
}

void cuda_solve_device(const float* A, std::size_t batch, std::size_t n1, std::size_t n2, const DeviceGameResults& out,
                       void* workspace, const RegretOptions& o, const Context& context) {
    const DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    const Schedule sc = make_schedule(o);
    if (batched(n1, n2)) {
        for (std::size_t first = 0; first < batch; first += kGpu.chunk_games) {
            const std::size_t games = std::min(kGpu.chunk_games, batch - first);
            // The kernel leaves each game's largest cumulative regret where its eps bound goes.
            launch_batched({A + first * n1 * n2, static_cast<int>(games), static_cast<int>(n1), static_cast<int>(n2),
                            first, sc, out.row_strategy + first * n1, out.col_strategy + first * n2, out.value + first,
                            out.gap + first, out.eps_bound + first, nullptr},
                           stream);
        }
    } else {
        solve_large_on_device(A, batch, n1, n2, sc, out, workspace, context.device, stream);
    }
    launch_eps_bound(out.eps_bound, batch, sc.iterations, stream);
    synchronize_unless_capturing(stream);
}

std::vector<GameSolution> cuda_solve(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                     const RegretOptions& o, const Context& context, MemoryTracker& tracker) {
    require(n1 <= INT_MAX && n2 <= INT_MAX, "A: at most 2^31 - 1 actions per player on the GPU");
    const DeviceGuard guard(context.device);
    Stream stream;
    const Schedule sc = make_schedule(o);
    if (o.method == Method::Naive) return naive_solve(A, batch, n1, n2, sc, stream.get(), tracker);
    if (batched(n1, n2)) return solve_batched(A, batch, n1, n2, sc, stream.get(), tracker);
    return solve_large(A, batch, n1, n2, sc, context.device, stream.get(), tracker);
}

}  // namespace hpcml::detail::regret
