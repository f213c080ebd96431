// A build without CUDA: similarity's CUDA entry points (backends.hpp) and the method table's
// launches (methods.hpp), raising NoDevice. The public API never reaches them there
// (make_context refuses backend Cuda first).
#include "backends.hpp"
#include "common/no_cuda.hpp"
#include "methods.hpp"

namespace hpcml::detail::similarity {

std::size_t cuda_max_shared_per_block(int) { return 0; }

void launch_fused(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&, StreamHandle) {
    no_cuda("similarity");
}
void launch_fused_upper(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&,
                        StreamHandle) {
    no_cuda("similarity");
}
void launch_sorted(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&, StreamHandle) {
    no_cuda("similarity");
}
void launch_sorted_upper(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&,
                         StreamHandle) {
    no_cuda("similarity");
}
void launch_naive(const Problem&, const Region&, const RegionOutput&, const CudaCall*, MemoryTracker&, StreamHandle) {
    no_cuda("similarity");
}
LaunchBlocks fused_blocks(const Problem&) { no_cuda("similarity"); }
LaunchBlocks sorted_blocks(const Problem&) { no_cuda("similarity"); }
void set_sort_per_launch_for_tests(bool) {}  // nothing sorts without CUDA
std::unique_ptr<CudaCall> prepare_sorted(const Problem&, const std::vector<Region>&, MemoryTracker&, StreamHandle) {
    no_cuda("similarity");
}

void cuda_run_host(const Problem&, const TilePlan&, Method, const SimilarityTileSink&, const Context&, MemoryTracker&) {
    no_cuda("similarity");
}
void cuda_run_host_into(const Problem&, const TilePlan&, Method, unsigned char*,
                        const std::function<void(std::uint64_t)>&, const Context&, MemoryTracker&) {
    no_cuda("similarity");
}
void cuda_run_device(const Problem&, const TilePlan&, Method, void*, const Context&, MemoryTracker&) {
    no_cuda("similarity_device");
}
void cuda_run_pairs(const Problem&, bool, const TilePlan&, Method, std::int32_t, const PassingSink&, const Context&,
                    MemoryTracker&) {
    no_cuda("similarity_pairs");
}
void cuda_run_pairs_on_device(const Problem&, const TilePlan&, Method, std::int32_t,
                              const SimilarityDevicePairsAllocator&, const Context&, MemoryTracker&) {
    no_cuda("similarity_pairs_on_device");
}

}  // namespace hpcml::detail::similarity
