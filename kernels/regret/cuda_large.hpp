// The regret-matching CUDA backend's large-game path (games of more than kMaxBatchedActions
// actions per player): the iteration of math.hpp's schedule captured once in a CUDA graph and
// replayed, several games per launch, with the exact gap evaluated on the device at record points
// and at the end.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "backends.hpp"
#include "common/memory.hpp"
#include "math.hpp"

namespace hpcml::detail::regret {

// Host payoffs: every game, chunk by chunk (upload, iterations, download).
std::vector<GameSolution> solve_large(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                      const Schedule& sc, int device, cudaStream_t stream, MemoryTracker& tracker);
// Device payoffs and results, queued on `stream`, in the caller's `workspace` (of
// large_device_workspace bytes); out.eps_bound[g] receives game g's largest cumulative regret,
// which the caller turns into the bound.
std::size_t large_device_workspace(std::size_t batch, std::size_t n1, std::size_t n2, int device);
void solve_large_on_device(const float* A, std::size_t batch, std::size_t n1, std::size_t n2, const Schedule& sc,
                           const DeviceGameResults& out, void* workspace, int device, cudaStream_t stream);

}  // namespace hpcml::detail::regret
