// The sorted method's GPU operands sorted once per call (sorted.cu's prepare_sorted): the ranges
// of an operand that a call's launches read (x's row bands, y's column groups), laid out as runs
// of 256-value segments, each run sorted once before the launches. Host code, so that the CPU
// tests check the layout (tests/test_similarity_sorted.cpp).
//
// A launch reads a range in segments from the range's start, so a run serves every range that
// starts a whole number of segments after the run's start and ends inside it: the row bands and
// column groups of a plan whose tiles are multiples of 256 share one run, as do the mirrored
// paths' bands (whole 256-row blocks, y from each band's diagonal on). Other ranges get runs of
// their own; a range inside another that does not start on its segments is stored twice.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "backends.hpp"

namespace hpcml::detail::similarity {

// A run of an operand: features [start, start + extent), sorted in segments from start, which
// are the layout's segments first_segment, first_segment + 1, ...
struct SortRun {
    std::size_t start = 0, extent = 0, first_segment = 0;
};

struct SortRuns {
    std::vector<SortRun> runs;
    std::size_t segments = 0;  // of every run, per sample: the layout's stride

    // The layout's first segment of [start, start + extent), or -1 where no run serves it.
    long long first_segment(std::size_t start, std::size_t extent, std::size_t segment) const {
        for (const SortRun& r : runs)
            if (r.start <= start && (start - r.start) % segment == 0 && start + extent <= r.start + r.extent)
                return static_cast<long long>(r.first_segment + (start - r.start) / segment);
        return -1;
    }
};

// Runs serving every (start, extent) range of `ranges` (any order; empty ones skipped): a range
// joins a run it overlaps or meets where their starts are a whole number of segments apart,
// else starts one of its own.
inline SortRuns plan_sort_runs(std::vector<std::pair<std::size_t, std::size_t>> ranges, std::size_t segment) {
    std::sort(ranges.begin(), ranges.end());
    SortRuns plan;
    for (const auto& [start, extent] : ranges) {
        if (extent == 0) continue;
        auto joins = [&, start = start](const SortRun& r) {
            return r.start <= start && (start - r.start) % segment == 0 && start - r.start <= r.extent;
        };
        const auto run = std::find_if(plan.runs.begin(), plan.runs.end(), joins);
        if (run != plan.runs.end()) {
            run->extent = std::max(run->extent, start + extent - run->start);
        } else {
            plan.runs.push_back({start, extent, 0});
        }
    }
    for (SortRun& r : plan.runs) {
        r.first_segment = plan.segments;
        plan.segments += (r.extent + segment - 1) / segment;
    }
    return plan;
}

// The runs of a call's x and of its y whose launches compute `launches`: where y is x (the same
// memory), y's ranges join x's runs and y has none.
struct CallRuns {
    SortRuns x, y;
};
inline CallRuns plan_call_runs(const std::vector<Region>& launches, bool y_is_x, std::size_t segment) {
    std::vector<std::pair<std::size_t, std::size_t>> x_ranges, y_ranges;
    for (const Region& r : launches) {
        x_ranges.emplace_back(r.row0, r.rows);
        (y_is_x ? x_ranges : y_ranges).emplace_back(r.col0, r.cols);
    }
    return {plan_sort_runs(std::move(x_ranges), segment), plan_sort_runs(std::move(y_ranges), segment)};
}

}  // namespace hpcml::detail::similarity
