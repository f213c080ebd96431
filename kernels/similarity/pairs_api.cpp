// The public similarity pair lists (similarity_pairs, similarity_pairs_device,
// similarity_pairs_on_device): the pairs that pass instead of a dense S, reduced tile by tile.
#include <string>

#include "common/error.hpp"
#include "entry.hpp"
#include "pairs.hpp"

namespace hpcml {

using detail::similarity::cpu_auto_problem;
using detail::similarity::CpuDelivery;
using detail::similarity::entry_point;
using detail::similarity::make_plan;
using detail::similarity::make_problem;
using detail::similarity::method_for;
using detail::similarity::Problem;
using detail::similarity::Region;

namespace {

// similarity_pairs and similarity_pairs_device: x and y in host memory, or (on_device) in the
// device's.
// A pair list's call, checked: the options with the output its reduction reads (Int32 counts,
// or Bool), the problem, and the least count that passes.
struct PairsCall {
    SimilarityOptions o;
    Problem p;
    bool count = false;
    bool none_pass = false;  // counts are at most samples (<= 2^31 - 1): a larger min_count passes nothing
    std::int32_t least = 1;
};

PairsCall pairs_call(MatrixView x, MatrixView y, const SimilarityOptions& options, std::size_t min_count,
                     bool on_device) {
    detail::require(options.mode == SimilarityMode::All || min_count >= 1,
                    "min_count: must be >= 1 in mode count, got 0");
    PairsCall call;
    call.o = options;
    call.count = call.o.mode == SimilarityMode::Count;
    call.o.output = call.count ? SimilarityOutput::Int32 : SimilarityOutput::Bool;
    call.p = make_problem(x, y, call.o);
    if (on_device) {
        detail::require_aligned(call.p.x, "x");
        detail::require_aligned(call.p.y, "y");
    }
    call.none_pass = call.count && min_count > call.p.samples;
    call.least = call.count && !call.none_pass ? static_cast<std::int32_t>(min_count) : 1;
    return call;
}

SimilarityPairs pairs_of(MatrixView x, MatrixView y, const SimilarityOptions& options, std::size_t min_count,
                         bool on_device) {
    const PairsCall call = pairs_call(x, y, options, min_count, on_device);
    const SimilarityOptions& o = call.o;
    const Problem& p = call.p;
    const bool count = call.count, none_pass = call.none_pass;
    const std::int32_t least = call.least;
    detail::Progress progress(o, std::uint64_t{p.n} * p.m);  // the CPU's tiles report; the GPU's pairs at the end
    detail::similarity::PairList pairs(p.n, count);
    using detail::similarity::PassingElement;
    const detail::similarity::PassingSink add_passing = [&](const Region& region, const PassingElement* passing,
                                                            std::size_t n) {
        for (std::size_t k = 0; k < n; ++k)
            pairs.add(region.row0 + passing[k].index / region.cols, region.col0 + passing[k].index % region.cols,
                      passing[k].count);
    };
    const detail::EntryPoint entry = on_device ? entry_point("similarity_pairs_device", p, o, true)
                                               : entry_point("similarity_pairs", p, o, false, CpuDelivery::Pairs);
    const RunStats stats = detail::dispatch(
        o, entry,
        [&](detail::MemoryTracker& tracker) {
            if (none_pass) return progress.add(std::uint64_t{p.n} * p.m);  // nothing to compute
            // Mode All as a bitmask tile (a word of 64 columns tested at once); where y is x, the
            // tiles above the diagonal only, each pair added with its mirror.
            SimilarityOptions cpu = o;
            if (!count) cpu.output = SimilarityOutput::Bitmask;
            const Problem tiles = make_problem(x, y, cpu);
            const Method method =
                method_for(cpu_auto_problem(tiles, cpu.tile, CpuDelivery::Pairs), o.method, Backend::Cpu);
            const bool symmetric = detail::similarity::uses_symmetry(tiles, method);
            const SimilarityTileSink add_tile = [&](const SimilarityTile& tile) {
                pairs.add_tile(tile, least, symmetric && tile.col0 > tile.row0);
            };
            run_cpu_to_sink(tiles, cpu.tile, method, add_tile, tracker, &progress, true);  // never the whole output
        },
        [&](const Context& context, detail::MemoryTracker& tracker) {
            if (on_device) {
                detail::require_device_pointer(x.data, context.device, "x");
                detail::require_device_pointer(y.data, context.device, "y");
            }
            if (!none_pass)
                detail::similarity::cuda_run_pairs(p, on_device, make_plan(p, o.tile, Backend::Cuda),
                                                   method_for(p, o.method, Backend::Cuda, context.device), least,
                                                   add_passing, context, tracker);
            progress.add(std::uint64_t{p.n} * p.m);  // all at once
        });
    progress.finish();
    SimilarityPairs result = pairs.finish();
    result.stats = stats;
    return result;
}

}  // namespace

SimilarityPairs similarity_pairs(MatrixView x, MatrixView y, const SimilarityOptions& options, std::size_t min_count) {
    return pairs_of(x, y, options, min_count, false);
}

SimilarityPairs similarity_pairs_device(MatrixView x, MatrixView y, const SimilarityOptions& options,
                                        std::size_t min_count) {
    return pairs_of(x, y, options, min_count, true);
}

RunStats similarity_pairs_on_device(MatrixView x, MatrixView y, const SimilarityDevicePairsAllocator& allocate,
                                    const SimilarityOptions& options, std::size_t min_count) {
    detail::require(static_cast<bool>(allocate), "allocate: an empty function");
    const PairsCall call = pairs_call(x, y, options, min_count, true);
    const Problem& p = call.p;
    return detail::dispatch(
        call.o, entry_point("similarity_pairs_on_device", p, call.o, true), [](detail::MemoryTracker&) {},
        [&](const Context& context, detail::MemoryTracker& tracker) {
            detail::require_device_pointer(x.data, context.device, "x");
            detail::require_device_pointer(y.data, context.device, "y");
            if (call.none_pass || p.n == 0 || p.m == 0) {
                (void)allocate(0);
                return;
            }
            detail::similarity::cuda_run_pairs_on_device(p, make_plan(p, call.o.tile, Backend::Cuda),
                                                         method_for(p, call.o.method, Backend::Cuda, context.device),
                                                         call.least, allocate, context, tracker);
        });
}

}  // namespace hpcml
