// The naive GPU baseline: what eager PyTorch does for
//   (x[:, :, None] - y[:, None, :]).abs().lt(t).sum(0)      (count; .all(0) for all)
// one simple kernel per operation, each materialising its result in global memory:
//   broadcast_subtract_kernel  samples x rows x cols float32 differences  (4 bytes per element)
//   abs_less_kernel            the same shape as bool                      (1 byte per element)
//   sum_over_samples_kernel    rows x cols int64 (PyTorch sums bool to int64), or all_...
//   encode_counts_kernel       the cast to the requested output type
// Cost: ~11 bytes of global traffic per pair-sample (write 4, read 4 + write 1, read 1), so it
// is memory-bound at about bandwidth / 11 pair-samples per second, and needs 5 bytes of device
// memory per pair-sample. It checks the free memory first and fails with OutOfMemory.
#include <cstdint>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda.hpp"

namespace hpcml::detail::similarity {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t elements) {
    const std::size_t blocks = (elements + kThreads - 1) / kThreads;
    return static_cast<unsigned>(blocks < 65536u * 16u ? blocks : 65536u * 16u);  // grid-stride beyond
}

__global__ void broadcast_subtract_kernel(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                                          std::size_t samples, std::size_t rows, std::size_t cols, float* diff) {
    const std::size_t pairs = rows * cols, total = samples * pairs;
    for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < total;
         e += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t s = e / pairs, i = e % pairs / cols, j = e % cols;
        diff[e] = x[s * ldx + i] - y[s * ldy + j];
    }
}

__global__ void abs_less_kernel(const float* diff, std::size_t total, float threshold, bool* mask) {
    for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < total;
         e += std::size_t{gridDim.x} * blockDim.x)
        mask[e] = fabsf(diff[e]) < threshold;
}

// One thread per pair, walking the samples: adjacent threads read adjacent bytes.
__global__ void sum_over_samples_kernel(const bool* mask, std::size_t samples, std::size_t pairs, bool all,
                                        std::int64_t* out) {
    for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < pairs;
         e += std::size_t{gridDim.x} * blockDim.x) {
        std::int64_t acc = all ? 1 : 0;
        for (std::size_t s = 0; s < samples; ++s) {
            if (all) {
                acc &= mask[s * pairs + e];
            } else {
                acc += mask[s * pairs + e];
            }
        }
        out[e] = acc;
    }
}

template <class T>
__global__ void encode_counts_kernel(const std::int64_t* counts, std::size_t rows, std::size_t cols,
                                     unsigned char* out, std::size_t stride) {
    for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < rows * cols;
         e += std::size_t{gridDim.x} * blockDim.x)
        reinterpret_cast<T*>(out + e / cols * stride)[e % cols] = static_cast<T>(counts[e]);
}

// One thread per output byte: 8 consecutive "all" flags.
__global__ void encode_bitmask_kernel(const std::int64_t* all, std::size_t rows, std::size_t cols,
                                      unsigned char* out, std::size_t stride) {
    const std::size_t row_bytes = (cols + 7) / 8;
    for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < rows * row_bytes;
         e += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t r = e / row_bytes, c0 = e % row_bytes * 8;
        unsigned byte = 0;
        for (std::size_t b = 0; b < 8 && c0 + b < cols; ++b)
            byte |= static_cast<unsigned>(all[r * cols + c0 + b] != 0) << b;
        out[r * stride + e % row_bytes] = static_cast<unsigned char>(byte);
    }
}

}  // namespace

void launch_naive(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
                  cudaStream_t stream) {
    const std::size_t pairs = detail::checked_mul(region.rows, region.cols, "similarity naive");
    if (pairs == 0) return;
    const std::size_t elements = detail::checked_mul(p.samples, pairs, "similarity naive");
    detail::ensure_device_fits(detail::checked_mul(elements, sizeof(float) + sizeof(bool), "similarity naive") +
                                   pairs * sizeof(std::int64_t),
                               "naive similarity (samples x rows x cols float32 differences + bool mask)");
    const bool all = p.mode == SimilarityMode::All;
    detail::DeviceBuffer<std::int64_t> reduced(tracker, pairs, stream, "naive similarity reduction");
    {
        detail::DeviceBuffer<float> diff(tracker, elements, stream, "naive similarity differences");
        detail::DeviceBuffer<bool> mask(tracker, elements, stream, "naive similarity mask");
        if (elements) {
            broadcast_subtract_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(
                p.x + region.row0, p.ldx, p.y + region.col0, p.ldy, p.samples, region.rows, region.cols, diff.data());
            HPCML_LAUNCH_CHECK("broadcast_subtract_kernel");
            abs_less_kernel<<<blocks_for(elements), kThreads, 0, stream>>>(diff.data(), elements, p.threshold, mask.data());
            HPCML_LAUNCH_CHECK("abs_less_kernel");
        }
        sum_over_samples_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(mask.data(), p.samples, pairs, all,
                                                                            reduced.data());
        HPCML_LAUNCH_CHECK("sum_over_samples_kernel");
    }
    auto* dst = static_cast<unsigned char*>(out.data);
    const unsigned blocks = blocks_for(pairs);
    switch (p.output) {
        case SimilarityOutput::Int32:
            encode_counts_kernel<std::int32_t><<<blocks, kThreads, 0, stream>>>(reduced.data(), region.rows, region.cols, dst, out.row_stride_bytes);
            break;
        case SimilarityOutput::UInt16:
            encode_counts_kernel<std::uint16_t><<<blocks, kThreads, 0, stream>>>(reduced.data(), region.rows, region.cols, dst, out.row_stride_bytes);
            break;
        case SimilarityOutput::UInt8:
        case SimilarityOutput::Bool:  // all() already gave 0 or 1
            encode_counts_kernel<std::uint8_t><<<blocks, kThreads, 0, stream>>>(reduced.data(), region.rows, region.cols, dst, out.row_stride_bytes);
            break;
        case SimilarityOutput::Bitmask:
            encode_bitmask_kernel<<<blocks, kThreads, 0, stream>>>(reduced.data(), region.rows, region.cols, dst, out.row_stride_bytes);
            break;
        case SimilarityOutput::Default:
            detail::raise(ErrorKind::Internal, "similarity: unresolved output type");
    }
    HPCML_LAUNCH_CHECK("encode kernel");
}

}  // namespace hpcml::detail::similarity
