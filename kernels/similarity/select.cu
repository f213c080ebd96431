// Pair lists on the GPU: the passing elements of a region's output, selected on the device by
// CUB (DeviceSelect::If, stable, so they stay in row-major order), so that only the pairs
// cross PCIe, 8 bytes each, instead of the dense region. Cost: a read of the region's output
// and a write of the selection, memory-bound like a copy.
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

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

}  // namespace hpcml::detail::similarity
