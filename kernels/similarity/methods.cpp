// The method table's lookups (methods.hpp), auto's rules, and the refusals a method checks
// before any launch.
#include "methods.hpp"

#include <algorithm>
#include <string>

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

// The measured crossover (docs/similarity.md, "Which method auto runs"; the grid in
// bench/results/2026-11-27-cpu-sorted-method.md): the sorted method pays a tile's tables and a
// band's merges per 512 columns and rows and a sort per sample, so it needs both sides wide and,
// in count mode, a group's worth of samples; mode All's early exit favours it at any sample count.
struct SortedOnCpuRule {
    std::size_t least_side, least_samples;
    std::uint64_t least_pairs;
};
constexpr SortedOnCpuRule kSortedOnCpu{
    .least_side = 512,         // below it sorted ran 0.14-0.83x fused (Zen 4, 4-256 samples, n = m 128-4000)
    .least_samples = 16,       // count mode: 4 samples 0.71-0.98x fused at n >= 1000, 16 samples 1.08-1.46x
    .least_pairs = 2'500'000,  // n = 1000 (1 M pairs) 0.71-1.67x, n >= 2000 1.13-2.64x
};

bool sorted_pays_on_cpu(const Problem& p) {
    const bool enough_samples = p.mode == SimilarityMode::All || p.samples >= kSortedOnCpu.least_samples;
    return enough_samples && std::min(p.n, p.m) >= kSortedOnCpu.least_side &&
           std::uint64_t{p.n} * p.m >= kSortedOnCpu.least_pairs;
}

}  // namespace hpcml::detail::similarity
