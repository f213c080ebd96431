// The method table's lookups (methods.hpp), auto's rules, and the refusals a method checks
// before any launch.
#include "methods.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.hpp"

namespace hpcml::detail::similarity {

const MethodEntry& method_entry(Method method) {
    for (const MethodEntry& entry : kMethods)
        if (entry.method == method) return entry;
    raise(ErrorKind::Internal, "similarity: no method entry for " + std::string(to_string(method)));
}

Method method_on_cpu(const Problem& problem, Method requested) {
    if (requested != Method::Auto) return requested;
    for (const MethodEntry& entry : kMethods)
        if (entry.auto_on_cpu && entry.auto_on_cpu(problem)) return entry.method;
    raise(ErrorKind::Internal, "similarity: no method for auto on the CPU");
}

Method cuda_method(const Problem& problem, Method requested, std::size_t max_shared_per_block) {
    if (requested != Method::Auto && method_entry(requested).cuda_shared_bytes <= max_shared_per_block)
        return requested;
    for (const MethodEntry& entry : kMethods)
        if (entry.auto_on_cuda && entry.auto_on_cuda(problem) && entry.cuda_shared_bytes <= max_shared_per_block)
            return entry.method;
    raise(ErrorKind::Internal, "similarity: no method for auto on a CUDA device");
}

Method cuda_method_checked(const Problem& problem, const TilePlan& plan, Method requested, int device) {
    const Method method = cuda_method(problem, requested, cuda_max_shared_per_block(device));
    if (const auto check = method_entry(method).cuda_check) check(problem, plan);
    return method;
}

void check_sorted_on_cuda(const Problem& p, const TilePlan& plan) {
    require(p.mode == SimilarityMode::All || p.samples <= sorted_gpu::kMostCountSamples,
            "method: the sorted method on the GPU counts at most " + std::to_string(sorted_gpu::kMostCountSamples) +
                " samples (mode count); use method fused");
    require(plan.tile_rows <= std::size_t{65535} * sorted_gpu::kRows,
            "tile: the sorted method on the GPU takes at most " + std::to_string(65535 * sorted_gpu::kRows) +
                " rows per tile");
}

namespace sorted_gpu {

bool sorted_gpu_one_block_per_sm() {
    const char* value = std::getenv("HPCML_SORTED_GPU_BLOCKS_PER_SM");
    if (!value || !*value) return false;
    if (std::string_view(value) != "1")
        raise(ErrorKind::InvalidArgument,
              "HPCML_SORTED_GPU_BLOCKS_PER_SM: 1 (the kernel built for one block per SM) or unset (the tuning "
              "policy's), got '" +
                  std::string(value) + "'");
    return true;
}

}  // namespace sorted_gpu

// The measured crossover (docs/similarity.md, "Which method auto runs"; the grid in
// bench/results/2026-11-28-cpu-sorted-second-step.md): the sorted method pays a tile's tables and
// rank maps per 512 columns and a sort per sample, so it needs both sides wide and, in count
// mode, a group's worth of samples; mode All's early exit (and its
// survivors checked directly) favour it at any sample count from 400 thousand pairs (the grid in
// bench/results/2026-11-29-cpu-sorted-third-step.md). The problem judged is what one run of the
// method gets (cpu_auto_problem: a sink's or a pair list's tile).
struct SortedOnCpuRule {
    std::size_t least_side, least_samples;
    std::uint64_t least_pairs;
    std::size_t many_samples;
    std::uint64_t least_pairs_many, least_pairs_many_plain;
    std::uint64_t least_pairs_all;
};
constexpr SortedOnCpuRule kSortedOnCpu{
    .least_side = 512,  // n = m = 512: sorted 0.58-0.81x fused at 16-256 samples (y = x; 1.24x y a copy at 64)
    // count: n = m = 1000 at 16 samples 1.13-1.19x; y = x, uint16 and uint8 at 2000: 16 samples 1.60-1.71x since
    // their mirrors are transposed 8 x 8 by SSE2 (0.69-0.92x element by element, when they asked 32 samples), at
    // 1000 0.87-0.93x; without SSE2 (Arm) their mirrors still go element by element: not measured there
    .least_samples = 16,
    .least_pairs = 1'000'000,     // n = m = 1000: 1.13-1.86x at 16, 64, 256 samples (0.90-1.02x at 32)
    .many_samples = 64,           // from here on
    .least_pairs_many = 500'000,  // n = m = 768: 0.99-1.43x at 64 and 256 samples, 0.77-0.91x at 16 and 32
    // where y is not x: n = m = 512 and 600 at 64-256 samples 1.15-1.58x (with y = x 0.86-1.07x)
    .least_pairs_many_plain = 250'000,
    // mode All, whatever the samples: n = m = 640 at 128 samples 1.10-1.29x, 768 at 16 1.01-1.44x; 512 at 256
    // samples 0.59x with y a copy of x (its diagonal pairs never fail), 0.86x with y = x
    .least_pairs_all = 400'000,
};

bool sorted_pays_on_cpu(const Problem& p) {
    const bool enough_samples = p.mode == SimilarityMode::All || p.samples >= kSortedOnCpu.least_samples;
    const std::uint64_t least_pairs = p.mode == SimilarityMode::All           ? kSortedOnCpu.least_pairs_all
                                      : p.samples < kSortedOnCpu.many_samples ? kSortedOnCpu.least_pairs
                                      : symmetry_pays(p)                      ? kSortedOnCpu.least_pairs_many
                                                                              : kSortedOnCpu.least_pairs_many_plain;
    return enough_samples && std::min(p.n, p.m) >= kSortedOnCpu.least_side && std::uint64_t{p.n} * p.m >= least_pairs;
}

}  // namespace hpcml::detail::similarity
