// Checked CUDA calls and launches. Every CUDA runtime call in hpcml goes through
// HPCML_CUDA_CHECK and every kernel launch is followed by HPCML_LAUNCH_CHECK, so a failure
// surfaces as an hpcml::Error naming the call, its CUDA error and where it happened.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "error.hpp"

namespace hpcml::detail {

[[noreturn]] void raise_cuda(cudaError_t status, const char* call, const char* file, int line);

// How many blocks of `kernel` (`threads` threads and `shared_bytes` of dynamic shared memory
// each) the current device runs at once: the runtime's occupancy times the SM count, queried
// once per device and kernel. Launch sizing reads it instead of assuming a GPU.
std::size_t resident_blocks(const void* kernel, int threads, std::size_t shared_bytes);

// Blocks of `threads` threads covering `n` elements, one per thread: at least one, at most `cap`;
// past the cap a kernel's grid-stride loop covers the rest.
inline unsigned blocks_for(std::size_t n, int threads = 256, std::size_t cap = std::size_t{65536} * 8) {
    const std::size_t blocks = (n + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
    return static_cast<unsigned>(blocks < 1 ? 1 : blocks < cap ? blocks : cap);
}

}  // namespace hpcml::detail

#define HPCML_CUDA_CHECK(call)                                                                                   \
    do {                                                                                                         \
        const cudaError_t hpcml_status_ = (call);                                                                \
        if (hpcml_status_ != cudaSuccess) ::hpcml::detail::raise_cuda(hpcml_status_, #call, __FILE__, __LINE__); \
    } while (0)

// Catches launch-configuration errors at once; asynchronous faults surface at the next
// synchronising call, which is itself checked.
#define HPCML_LAUNCH_CHECK(kernel_name)                                                               \
    do {                                                                                              \
        const cudaError_t hpcml_status_ = cudaGetLastError();                                         \
        if (hpcml_status_ != cudaSuccess)                                                             \
            ::hpcml::detail::raise_cuda(hpcml_status_, "launch of " kernel_name, __FILE__, __LINE__); \
    } while (0)

namespace hpcml::detail {

// Whether `stream` is being captured into a CUDA graph (torch.compile's "reduce-overhead"):
// waiting on it is then an error, and a call that must return complete cannot run.
inline bool capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    HPCML_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
    return status != cudaStreamCaptureStatusNone;
}

// The end of a stream-ordered call on the caller's stream: waits for its work, except while the
// stream is being captured, where the captured work runs, and reports its faults, when the graph
// is launched.
inline void synchronize_unless_capturing(cudaStream_t stream) {
    if (!capturing(stream)) HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace hpcml::detail
