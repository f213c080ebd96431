// Which kernel a CUDA device runs for a method, and the shared memory each kernel's block asks
// for: host code, so that CI checks them against every architecture without a GPU
// (tests/test_similarity_sorted.cpp, SharedMemory.*).
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>

#include "sorted_block.hpp"

namespace hpcml::detail::similarity {

// Dynamic shared memory of one block of `method`'s kernel: the sorted block's (96,672 bytes,
// sorted.cu); the fused and naive kernels have static shared memory only (under 48 KiB).
constexpr std::size_t cuda_dynamic_shared_bytes(Method method) {
    return method == Method::Sorted ? sizeof(sorted_gpu::Shared) : 0;
}

// The method a device whose blocks may have `max_shared_per_block` bytes runs for `requested`:
// Auto is the fused kernel (the sorted one has no measured cost model on the GPU), and a method
// whose block does not fit (the sorted one on Turing's 64 KiB) falls back to the fused kernel,
// which RunStats::method reports.
constexpr Method cuda_method(Method requested, std::size_t max_shared_per_block) {
    if (requested == Method::Auto) return Method::Fused;
    if (cuda_dynamic_shared_bytes(requested) > max_shared_per_block) return Method::Fused;
    return requested;
}

// The device's opt-in shared memory per block (cuda_driver.cpp; the CUDA runtime's attribute).
std::size_t cuda_max_shared_per_block(int device);

// cuda_method on `device`: what similarity's CUDA calls run, and report.
inline Method cuda_method_on(Method requested, int device) {
    return cuda_method(requested, cuda_max_shared_per_block(device));
}

}  // namespace hpcml::detail::similarity
