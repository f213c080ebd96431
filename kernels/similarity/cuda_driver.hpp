// What the CUDA backend's two host-side files share (cuda_driver.cpp: results to the host or the
// device; cuda_pairs.cpp: pair lists): the inputs' upload, a guard that drains streams, and how
// many tiles go into one launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "common/cuda_memory.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::similarity {

// The CUDA host side's tuning: it changes speed and memory, never results. None of these was
// timed against other values; each says what it bounds.
struct CudaHostPolicy {
    std::size_t waves;                // a launch's blocks: this many full waves of its kernel (tiles_per_launch)
    std::size_t staged_band_bytes;    // the mirrored path's staged band, pinned twice (at least a block's rows)
    std::size_t whole_rows_elements;  // a device pair list's launch of whole rows, at most (no sort needed)
};
inline constexpr CudaHostPolicy kCudaHost{
    .waves = 2,  // one wave's tail overlaps the next
    // 128 MiB pinned in all, unless a row of blocks is larger: 128 rows fused, 256 sorted (1 and
    // 2 x 277 MB at 270725 int32 columns)
    .staged_band_bytes = std::size_t{64} << 20,
    .whole_rows_elements = std::size_t{1} << 25,  // 128 MiB of counts, 256 MiB of selection
};

// How many tiles of one row band go into one launch: enough of the method's blocks for two full
// waves of its kernel (what the device runs at once, twice), so that one wave's tail overlaps
// the next. A method without a launch shape (the naive baseline) goes tile by tile, as the seed
// did, or its intermediate would grow with the group. Results do not depend on the grouping.
std::size_t tiles_per_launch(const Problem& p, const TilePlan& plan, Method method);

// The method's state for a call whose launches compute `launches` (its cuda_prepare, on
// `stream`; null where it needs none): declared before the call's Drain, it outlives the launches.
std::unique_ptr<CudaCall> prepare_call(const Problem& dev, Method method, const std::vector<Region>& launches,
                                       detail::MemoryTracker& tracker, cudaStream_t stream);

// Waits for its streams when it goes out of scope (a throw included): declared after the
// buffers they use, it runs before those are freed.
struct Drain {
    std::vector<cudaStream_t> streams;  // 0, the default stream, included
    ~Drain() {
        for (cudaStream_t s : streams) (void)cudaStreamSynchronize(s);
    }
};

// x and y copied to the device once, packed: a view of a column block of a wider matrix copies
// only its columns. y is not copied when it is x, or a prefix of x's columns. `problem` is the
// host problem with its pointers on the device.
struct DeviceInputs {
    detail::DeviceBuffer<float> x, y;
    Problem problem;
};
DeviceInputs upload(const Problem& host, cudaStream_t stream, detail::MemoryTracker& tracker);

}  // namespace hpcml::detail::similarity
