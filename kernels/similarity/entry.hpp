// What the similarity entry points share (api.cpp: dense results; pairs_api.cpp: pair lists):
// the checked problem, its tile plan, the method a backend runs, what the common dispatch is told
// of the call, and the CPU's loop over a plan's tiles into a sink.
#pragma once

#include <hpcml/similarity.hpp>

#include <cstddef>
#include <optional>
#include <string_view>

#include "backends.hpp"
#include "common/dispatch.hpp"
#include "methods.hpp"

namespace hpcml::detail::similarity {

// Checks every argument and returns the problem the backends see (which none of them changes).
Problem make_problem(MatrixView x, MatrixView y, const SimilarityOptions& options);

// The tiles a call's output goes in (the public plan, similarity_tile_plan; symmetric where the
// method uses y = x). Unset tile: on the CPU the whole output in one region, a pair list's in
// 2048 x 2048 tiles (a 512 KiB bitmask, in the L2 cache as it is scanned); on the GPU 1024 x 1024
// tiles (a batch per launch), so that its staging memory stays small for any output size.
TilePlan make_plan(const Problem& p, std::optional<std::size_t> tile, Backend backend, bool symmetric = false,
                   bool pairs = false);

// The method a call runs where it asked for `requested` (methods.hpp): on the CPU Auto is the
// cost model's choice (docs/similarity.md) for the problem it is given (cpu_auto_problem's); on
// a CUDA device, cuda_method's.
Method method_for(const Problem& p, Method requested, Backend backend, int device = 0);

// Where a call's CPU backend delivers: into one output (a method that takes it whole gets one
// region), or tile by tile (make_plan's tiles) to a sink or into a pair list.
enum class CpuDelivery { Output, Sink, Pairs };

// The problem the CPU's Auto judges: the call's where the method gets the whole output, else one
// tile of the plan, the shape each of the method's runs gets (a sink's tiles, a pair list's).
Problem cpu_auto_problem(const Problem& p, std::optional<std::size_t> tile, CpuDelivery delivery);

// What the similarity entry points accept of ExecutionOptions; on a CUDA device, the method's
// refusals are checked with the plan its calls run (make_plan), before any launch. Holds
// references to p and options.
detail::EntryPoint entry_point(std::string_view name, const Problem& p, const SimilarityOptions& options,
                               bool device_memory = false, CpuDelivery delivery = CpuDelivery::Output);

// The CPU backend to a sink, through a tile buffer. Where y is x (uses_symmetry) the method
// computes the tiles on and above the diagonal only (square tiles; the diagonal ones half) and
// hands each off-diagonal tile's mirror to the sink right after the tile itself (for a
// `pair_list`, not: the sink gets the tiles on and above the diagonal only, and adds the mirrored
// pairs itself).
void run_cpu_to_sink(const Problem& p, std::optional<std::size_t> tile_option, Method method,
                     const SimilarityTileSink& sink, detail::MemoryTracker& tracker, detail::Progress* progress,
                     bool pair_list = false);

}  // namespace hpcml::detail::similarity
