// The naive GPU baseline: what eager PyTorch does for
//   (x[:, :, None] - y[:, None, :]).abs().lt(t).sum(0)      (count; .all(0) for all)
// one simple kernel per operation, each materialising its result in global memory:
//   broadcast_subtract_kernel  samples x rows x cols float32 differences  (4 bytes per element)
//   abs_less_kernel            the same shape as bool                      (1 byte per element)
//   sum_over_samples_kernel    rows x cols int64 (PyTorch sums bool to int64), or all_...
//   encode_*_kernel            the cast to the requested output type (math.hpp's encodings)
// Cost: ~11 bytes of global traffic per pair-sample (write 4, read 4 + write 1, read 1), so it
// is memory-bound at about bandwidth / 11 pair-samples per second, and needs 5 bytes of device
// memory per pair-sample. It checks the free memory first and fails with OutOfMemory. Its
// kernels are as good as PyTorch's elementwise ones for these shapes: grids indexed by (column,
// row, sample), no integer division per element, coalesced loads and stores.
#include <cstdint>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda_launchers.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity {

namespace {

constexpr int kThreads = 256;

// A grid over (columns, rows, samples): x covers the columns, y and z stride over rows and samples.
dim3 grid_for(std::size_t cols, std::size_t rows, std::size_t depth) {
    auto clamp = [](std::size_t v, std::size_t limit) {
        return static_cast<unsigned>(v < 1 ? 1 : v < limit ? v : limit);
    };
    return dim3(clamp((cols + kThreads - 1) / kThreads, 1u << 20), clamp(rows, 65535), clamp(depth, 64));
}

__global__ void broadcast_subtract_kernel(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                                          std::size_t samples, std::size_t rows, std::size_t cols, float* diff) {
    for (std::size_t s = blockIdx.z; s < samples; s += gridDim.z)
        for (std::size_t i = blockIdx.y; i < rows; i += gridDim.y) {
            const float xi = x[s * ldx + i];
            float* out = diff + (s * rows + i) * cols;
            for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < cols;
                 j += std::size_t{gridDim.x} * blockDim.x)
                out[j] = xi - y[s * ldy + j];
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

// reduced holds sums (mode Count) or all()'s 0 or 1 (mode All: encoded as a count of 1 sample).
template <class Out>
__global__ void encode_elements_kernel(const std::int64_t* reduced, std::size_t rows, std::size_t cols,
                                       unsigned char* out, std::size_t stride) {
    const std::uint32_t samples = Out::mode == SimilarityMode::All ? 1 : 0;  // unused by counts
    for (std::size_t r = blockIdx.y; r < rows; r += gridDim.y)
        for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cols;
             c += std::size_t{gridDim.x} * blockDim.x) {
            auto* row = reinterpret_cast<typename Out::Element*>(out + r * stride);
            row[c] = Out::encode(static_cast<std::uint32_t>(reduced[r * cols + c]), samples);
        }
}

// One thread per output byte: 8 consecutive "all" flags.
__global__ void encode_bitmask_kernel(const std::int64_t* all, std::size_t rows, std::size_t cols, unsigned char* out,
                                      std::size_t stride) {
    const std::size_t bytes = row_bytes(cols, SimilarityOutput::Bitmask);
    for (std::size_t r = blockIdx.y; r < rows; r += gridDim.y)
        for (std::size_t e = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; e < bytes;
             e += std::size_t{gridDim.x} * blockDim.x) {
            const std::int64_t* flags = all + r * cols + e * 8;
            const auto valid = static_cast<unsigned>(cols - e * 8 < 8 ? cols - e * 8 : 8);
            out[r * stride + e] = encode_bitmask_byte([&](unsigned b) { return flags[b] != 0; }, valid);
        }
}

}  // namespace

void launch_naive(const Problem& p, const Region& region, const RegionOutput& out, const CudaCall*,
                  detail::MemoryTracker& tracker, StreamHandle stream_handle) {
    const auto stream = static_cast<cudaStream_t>(stream_handle);
    const std::size_t pairs = detail::checked_mul(region.rows, region.cols, "similarity naive");
    if (pairs == 0) return;
    const std::size_t elements = detail::checked_mul(p.samples, pairs, "similarity naive");
    detail::ensure_device_fits(
        detail::checked_mul(elements, sizeof(float) + sizeof(bool), "similarity naive") + pairs * sizeof(std::int64_t),
        "naive similarity (samples x rows x cols float32 differences + bool mask)");
    const bool all = p.mode == SimilarityMode::All;
    detail::DeviceBuffer<std::int64_t> reduced(tracker, pairs, stream, "naive similarity reduction");
    {
        detail::DeviceBuffer<float> diff(tracker, elements, stream, "naive similarity differences");
        detail::DeviceBuffer<bool> mask(tracker, elements, stream, "naive similarity mask");
        if (elements) {
            broadcast_subtract_kernel<<<grid_for(region.cols, region.rows, p.samples), kThreads, 0, stream>>>(
                p.x + region.row0, p.ldx, p.y + region.col0, p.ldy, p.samples, region.rows, region.cols, diff.data());
            HPCML_LAUNCH_CHECK("broadcast_subtract_kernel");
            abs_less_kernel<<<blocks_for(elements, kThreads, std::size_t{65536} * 16), kThreads, 0, stream>>>(
                diff.data(), elements, p.threshold, mask.data());
            HPCML_LAUNCH_CHECK("abs_less_kernel");
        }
        sum_over_samples_kernel<<<blocks_for(pairs, kThreads, std::size_t{65536} * 16), kThreads, 0, stream>>>(
            mask.data(), p.samples, pairs, all, reduced.data());
        HPCML_LAUNCH_CHECK("sum_over_samples_kernel");
    }
    auto* dst = static_cast<unsigned char*>(out.data);
    const bool known = Outputs::visit(p.output, [&](auto entry) {
        using Out = decltype(entry);
        const dim3 blocks =
            grid_for(ceil_div(region.cols, Out::columns_per_element), region.rows, 1);  // a thread per element
        if constexpr (Out::bits) {
            encode_bitmask_kernel<<<blocks, kThreads, 0, stream>>>(reduced.data(), region.rows, region.cols, dst,
                                                                   out.row_stride_bytes);
        } else {
            encode_elements_kernel<Out>
                <<<blocks, kThreads, 0, stream>>>(reduced.data(), region.rows, region.cols, dst, out.row_stride_bytes);
        }
    });
    if (!known) detail::raise(ErrorKind::Internal, "similarity: unresolved output type");
    HPCML_LAUNCH_CHECK("encode kernel");
}

}  // namespace hpcml::detail::similarity
