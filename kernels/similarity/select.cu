// Pair lists on the GPU: the passing elements of a region's output, selected on the device by
// CUB (DeviceSelect::If, stable, so they stay in row-major order), so that only the pairs
// cross PCIe, 8 bytes each, instead of the dense region. Cost: a read of the region's output
// and a write of the selection, memory-bound like a copy. Pairs left on the device
// (similarity_pairs_on_device) are appended as keys (row * m + column), sorted by CUB's radix
// sort where a row came in several regions, and split into rows and columns: each a pass over
// the pairs, memory-bound.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::similarity {

namespace {

// Element e of the region's output as a PassingElement: Int32 counts, or Bool's 0 and 1.
struct ElementAt {
    const unsigned char* out;
    bool int32;
    __device__ PassingElement operator()(std::uint32_t e) const {
        return {e, int32 ? reinterpret_cast<const std::int32_t*>(out)[e] : static_cast<std::int32_t>(out[e])};
    }
};

struct Passes {
    std::int32_t min_count;
    __device__ bool operator()(const PassingElement& p) const { return p.count >= min_count; }
};

}  // namespace

std::size_t select_passing(const unsigned char* out, SimilarityOutput output, std::size_t elements,
                           std::int32_t min_count, PassingElement* selected, unsigned long long* selected_count,
                           void* temp, std::size_t temp_bytes, cudaStream_t stream) {
    detail::require(elements < (std::size_t{1} << 31),
                    "tile: a pair list's tile holds at most 2^31 - 1 pairs on the GPU (tile <= 46340)");
    const auto in = thrust::make_transform_iterator(thrust::counting_iterator<std::uint32_t>(0),
                                                    ElementAt{out, output == SimilarityOutput::Int32});
    HPCML_CUDA_CHECK(cub::DeviceSelect::If(temp, temp_bytes, in, selected, selected_count, static_cast<int>(elements),
                                           Passes{min_count}, stream));
    return temp_bytes;
}

namespace {

constexpr unsigned kPairThreads = 256;  // the pair keys' kernels: one thread a pair, not timed (a pass at memory speed)

unsigned pair_blocks(std::size_t count) {
    return static_cast<unsigned>(std::min<std::size_t>((count + kPairThreads - 1) / kPairThreads, 65535));
}

__global__ void append_pair_keys_kernel(const PassingElement* selected, std::size_t count, std::size_t row0,
                                        std::size_t col0, std::size_t cols, std::size_t m, std::uint64_t* keys,
                                        std::int32_t* counts) {
    for (std::size_t k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < count;
         k += std::size_t{gridDim.x} * blockDim.x) {
        const PassingElement e = selected[k];
        keys[k] = (row0 + e.index / cols) * m + col0 + e.index % cols;
        if (counts) counts[k] = e.count;
    }
}

__global__ void split_pair_keys_kernel(const std::uint64_t* keys, const std::int32_t* counts, std::size_t count,
                                       std::size_t m, std::int64_t* i, std::int64_t* j, std::int32_t* counts_out) {
    for (std::size_t k = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; k < count;
         k += std::size_t{gridDim.x} * blockDim.x) {
        const std::uint64_t key = keys[k];
        i[k] = static_cast<std::int64_t>(key / m);
        j[k] = static_cast<std::int64_t>(key % m);
        if (counts_out) counts_out[k] = counts[k];
    }
}

}  // namespace

void append_pair_keys(const PassingElement* selected, std::size_t count, const Region& region, std::size_t m,
                      std::uint64_t* keys, std::int32_t* counts, cudaStream_t stream) {
    if (count == 0) return;
    append_pair_keys_kernel<<<pair_blocks(count), kPairThreads, 0, stream>>>(selected, count, region.row0, region.col0,
                                                                             region.cols, m, keys, counts);
    HPCML_LAUNCH_CHECK("pair keys kernel");
}

std::size_t sort_pair_keys(std::uint64_t* keys, std::uint64_t* keys_alt, std::int32_t* counts, std::int32_t* counts_alt,
                           std::size_t count, int bits, bool& sorted_in_alt, void* temp, std::size_t temp_bytes,
                           cudaStream_t stream) {
    detail::require(count < (std::size_t{1} << 31),
                    "min_count: more than 2^31 - 1 pairs pass in rows wider than one launch, too many to order on the "
                    "device (raise min_count, or use similarity_pairs_device)");
    cub::DoubleBuffer<std::uint64_t> k(keys, keys_alt);
    if (counts) {
        cub::DoubleBuffer<std::int32_t> v(counts, counts_alt);
        HPCML_CUDA_CHECK(
            cub::DeviceRadixSort::SortPairs(temp, temp_bytes, k, v, static_cast<int>(count), 0, bits, stream));
        // CUB keeps keys and values in step: both end in the same buffer of their pair.
    } else {
        HPCML_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, k, static_cast<int>(count), 0, bits, stream));
    }
    sorted_in_alt = k.selector == 1;
    return temp_bytes;
}

void split_pair_keys(const std::uint64_t* keys, const std::int32_t* counts, std::size_t count, std::size_t m,
                     std::int64_t* i, std::int64_t* j, std::int32_t* counts_out, cudaStream_t stream) {
    if (count == 0) return;
    split_pair_keys_kernel<<<pair_blocks(count), kPairThreads, 0, stream>>>(keys, counts, count, m, i, j, counts_out);
    HPCML_LAUNCH_CHECK("pair split kernel");
}

}  // namespace hpcml::detail::similarity
