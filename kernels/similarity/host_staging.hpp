// The CUDA host path's host side (cuda_driver.cpp's run_host), in host code so that the CPU
// tests drive it with the device faked (tests/test_similarity_tiles.cpp): which region each
// step of the two-slot pipeline (common/pipeline.hpp) computes, and how a finished region,
// staged in pinned memory or copied straight into a page-locked output, is handed on.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backends.hpp"

namespace hpcml::detail::similarity {

// Where the host path's results go: tiles to a sink, in row-major order, or the caller's n x m
// output, straight from the device where it is page-locked (copied into by the copy engine at
// the link's rate), else through pinned slots copied out by several threads (host_copy_rows).
struct HostDestination {
    const SimilarityTileSink* sink = nullptr;
    unsigned char* out = nullptr;
    std::size_t out_row_bytes = 0;
    bool out_page_locked = false;
    const std::function<void(std::uint64_t)>* delivered = nullptr;  // elements in `out`, calling thread

    bool staged() const { return !out || !out_page_locked; }
};

// The regions of one launch each: the plan's row bands cut into groups of `group` tiles
// (SimilarityTilePlan::bands).
std::vector<Region> launch_regions(const TilePlan& plan, std::size_t group);

// The mirrored path's steps (y is x, the output whole on the device): row bands of `band` rows
// (a multiple of 128, the mirror's block: whole blocks of the method), each over every column.
std::vector<Region> mirrored_bands(std::size_t n, std::size_t m, SimilarityOutput output, std::size_t band);

// A finished region handed on, on the calling thread: `staged` holds its rows packed
// (row_bytes(region.cols) each), given to the sink as tiles of the plan in row-major order or
// copied into `out`; a page-locked `out` already holds them (staged is unused). Then the
// region's elements are reported delivered.
void hand_on(const Region& region, const unsigned char* staged, SimilarityOutput output, const TilePlan& plan,
             const HostDestination& to);

}  // namespace hpcml::detail::similarity
