// The public similarity entry points for dense results (pair lists: pairs_api.cpp): argument
// checks, backend choice, output tiling; and what both files share (entry.hpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "backends.hpp"
#include "common/dispatch.hpp"
#include "common/error.hpp"
#include "common/names.hpp"
#include "methods.hpp"
#include "entry.hpp"

namespace hpcml {

using detail::similarity::Problem;
using detail::similarity::Region;
using detail::similarity::RegionOutput;
using detail::similarity::TilePlan;

SimilarityOutput resolve_output(const SimilarityOptions& options) {
    if (options.output != SimilarityOutput::Default) return options.output;
    return options.mode == SimilarityMode::Count ? SimilarityOutput::Int32 : SimilarityOutput::Bool;
}

std::size_t similarity_output_bytes(std::size_t n, std::size_t m, SimilarityOutput output) {
    return detail::checked_mul(n, detail::similarity::row_bytes(m, output), "similarity output");
}

namespace {
constexpr std::array<detail::Named<SimilarityMode>, 2> kModes{
    {{SimilarityMode::Count, "count"}, {SimilarityMode::All, "all"}}};
}  // namespace

std::string_view to_string(SimilarityMode mode) noexcept { return detail::name_in(kModes, mode); }

namespace {
// "default", then the output table's names.
constexpr auto kOutputNames = [] {
    constexpr auto& table = detail::similarity::Outputs::names;
    std::array<detail::Named<SimilarityOutput>, table.size() + 1> names{};
    names[0] = {SimilarityOutput::Default, "default"};
    for (std::size_t k = 0; k < table.size(); ++k) names[k + 1] = table[k];
    return names;
}();
}  // namespace

std::string_view to_string(SimilarityOutput output) noexcept { return detail::name_in(kOutputNames, output); }

SimilarityOutputInfo similarity_output_info(SimilarityOutput output) {
    SimilarityOutputInfo info;
    const bool known = detail::similarity::Outputs::visit(output, [&](auto entry) {
        using Out = decltype(entry);
        info = {.name = Out::name,
                .numpy_dtype = Out::numpy,
                .npy_descr = Out::npy_descr,
                .element_bytes = sizeof(typename Out::Element),
                .bits = Out::bits,
                .columns_per_element = Out::columns_per_element,
                .largest_count = Out::largest,
                .mode = Out::mode};
    });
    detail::require(known, "output: " + std::string(output == SimilarityOutput::Default ? "default" : "not") +
                               " an output type (" + std::to_string(static_cast<int>(output)) +
                               "); resolve_output() names the one options ask for");
    return info;
}

std::array<std::size_t, 2> similarity_output_shape(std::size_t n, std::size_t m, SimilarityOutput output) {
    const SimilarityOutputInfo info = similarity_output_info(output);
    return {n, detail::ceil_div(m, info.columns_per_element)};
}

SimilarityMode parse_similarity_mode(std::string_view text, std::string_view argument) {
    return detail::parse_in(kModes, text, argument);
}

SimilarityOutput parse_similarity_output(std::string_view text, std::string_view argument) {
    return detail::parse_in(kOutputNames, text, argument);
}

std::vector<std::string_view> similarity_mode_names() { return detail::names_in(kModes); }
std::vector<std::string_view> similarity_output_names() { return detail::names_in(detail::similarity::Outputs::names); }

void check_similarity_options(const SimilarityOptions& options, std::size_t samples, std::string_view output_argument) {
    using detail::require;
    require(std::isfinite(options.threshold) && options.threshold >= 0.0f,
            "threshold: must be finite and >= 0, got " + std::to_string(options.threshold));
    require(!options.tile || *options.tile >= 1, "tile: expected an integer >= 1, got 0");
    const SimilarityOutput resolved = resolve_output(options);
    detail::require(resolved != SimilarityOutput::Default && detail::contains(kOutputNames, resolved),
                    std::string(output_argument) + ": not an output type (" +
                        std::to_string(static_cast<int>(options.output)) + ")");
    const SimilarityOutputInfo info = similarity_output_info(resolved);
    const std::string output(info.name);
    if (info.mode != options.mode) {
        std::string writes;  // the outputs of the mode asked for, from the table
        for (const auto& entry : detail::similarity::Outputs::names)
            if (similarity_output_info(entry.value).mode == options.mode)
                writes += (writes.empty() ? "" : ", ") + std::string(entry.name);
        const bool count = options.mode == SimilarityMode::Count;
        detail::raise(ErrorKind::InvalidArgument, std::string(output_argument) + ": " + output +
                                                      " is an output of mode " + (count ? "all" : "count") + "; mode " +
                                                      (count ? "count" : "all") + " writes " + writes);
    }
    require(samples <= info.largest_count, std::string(output_argument) + ": " + output + " holds counts up to " +
                                               std::to_string(info.largest_count) + ", but there are " +
                                               std::to_string(samples) + " samples");
}

}  // namespace hpcml

namespace hpcml::detail::similarity {

// Declared, with what each does, in entry.hpp.

Problem make_problem(MatrixView x, MatrixView y, const SimilarityOptions& options) {
    using detail::require;
    if (!y.data && y.rows == 0 && y.cols == 0) y = x;  // MatrixView{} means y = x
    require(x.data || x.rows == 0 || x.cols == 0,
            "x: null data pointer for a " + std::to_string(x.rows) + " x " + std::to_string(x.cols) + " matrix");
    require(y.data || y.rows == 0 || y.cols == 0,
            "y: null data pointer for a " + std::to_string(y.rows) + " x " + std::to_string(y.cols) + " matrix");
    require(x.rows == y.rows, "y: has " + std::to_string(y.rows) + " samples (rows) but x has " +
                                  std::to_string(x.rows) + "; both must have the same number of samples");
    for (const auto& [m, name] : {std::pair{&x, "x"}, std::pair{&y, "y"}})
        require(m->ld == 0 || m->ld >= m->cols, std::string(name) + ": leading dimension " + std::to_string(m->ld) +
                                                    " is smaller than its " + std::to_string(m->cols) + " columns");
    check_similarity_options(options, x.rows);

    Problem p;
    p.x = x.data;
    p.y = y.data;
    p.ldx = x.ld ? x.ld : x.cols;
    p.ldy = y.ld ? y.ld : y.cols;
    p.samples = x.rows;
    p.n = x.cols;
    p.m = y.cols;
    p.threshold = options.threshold;
    p.mode = options.mode;
    p.output = resolve_output(options);
    p.symmetric = p.x == p.y && p.ldx == p.ldy && p.n == p.m;
    (void)detail::checked_mul(p.n, p.m, "similarity output");
    return p;
}

TilePlan make_plan(const Problem& p, std::optional<std::size_t> tile, Backend backend, bool symmetric, bool pairs) {
    const std::size_t whole = std::max<std::size_t>({p.n, p.m, 1});
    const std::size_t unset = backend == Backend::Cuda ? 1024 : pairs ? 2048 : whole;
    return TilePlan(similarity_tile_plan(p.n, p.m, tile.value_or(unset), p.output, symmetric));
}

Method method_for(const Problem& p, Method requested, Backend backend, int device) {
    if (backend == Backend::Cuda) return cuda_method(p, requested, cuda_max_shared_per_block(device));
    return method_on_cpu(p, requested);
}

Problem cpu_auto_problem(const Problem& p, std::optional<std::size_t> tile, CpuDelivery delivery) {
    if (delivery == CpuDelivery::Output) return p;
    Problem unit = p;
    // A pair list in mode All runs as bitmask tiles (pairs_api.cpp), whose plan rounds columns to 8.
    if (delivery == CpuDelivery::Pairs && p.mode == SimilarityMode::All) unit.output = SimilarityOutput::Bitmask;
    const TilePlan plan = make_plan(unit, tile, Backend::Cpu, false, delivery == CpuDelivery::Pairs);
    unit.n = std::min(p.n, plan.tile_rows);
    unit.m = std::min(p.m, plan.tile_cols);
    return unit;
}

detail::EntryPoint entry_point(std::string_view name, const Problem& p, const SimilarityOptions& options,
                               bool device_memory, CpuDelivery delivery) {
    return {.name = name,
            .takes_stream = device_memory,
            .methods = detail::similarity::kMethodList,
            .device_memory = device_memory,
            .reports_progress = !device_memory,
            .shape = {p.samples, p.n, p.m},
            .auto_on_cpu = method_for(cpu_auto_problem(p, options.tile, delivery), Method::Auto, Backend::Cpu),
            .on_cuda_method = [&p, &options](Method requested, int device) {
                return detail::similarity::cuda_method_checked(p, make_plan(p, options.tile, Backend::Cuda), requested,
                                                               device);
            }};
}

void run_cpu_to_sink(const Problem& p, std::optional<std::size_t> tile_option, Method method,
                     const SimilarityTileSink& sink, detail::MemoryTracker& tracker, detail::Progress* progress,
                     bool pair_list) {
    const bool symmetric = uses_symmetry(p, method);
    const bool sink_mirrors = !pair_list;
    const TilePlan plan = make_plan(p, tile_option, Backend::Cpu, symmetric, pair_list);
    const std::size_t tile_bytes = detail::checked_mul(plan.tile_rows, row_bytes(plan.tile_cols, p.output), "tile");
    detail::HostBuffer<unsigned char> tile_buffer(tracker, tile_bytes, "similarity tile buffer"), mirror_buffer;
    if (sink_mirrors && symmetric && plan.tiles.row_blocks.size() > 1)
        mirror_buffer = detail::HostBuffer<unsigned char>(tracker, tile_bytes, "similarity mirror tile buffer");
    plan.tiles.for_each_band(1, [&](const SimilarityPlannedTile& planned) {  // a symmetric plan's from the diagonal on
        const Region region = region_of(planned);
        // Its mirror where y is x (none for a diagonal tile), as a region (empty: none).
        const Region mirrored =
            symmetric ? region_of(similarity_mirror_of(planned).value_or(SimilarityPlannedTile{})) : Region{};
        const bool mirror = units(mirrored) > 0 && sink_mirrors;
        const RegionOutput tile{tile_buffer.data(), row_bytes(region.cols, p.output)};
        const RegionOutput back{mirror_buffer.data(), row_bytes(region.rows, p.output)};
        method_entry(method).cpu(p, region, tile, tracker, progress, mirror ? &back : nullptr);
        sink(SimilarityTile{region.row0, region.col0, region.rows, region.cols, tile.data, tile.row_stride_bytes,
                            p.output});
        if (mirror)
            sink(SimilarityTile{mirrored.row0, mirrored.col0, mirrored.rows, mirrored.cols, back.data,
                                back.row_stride_bytes, p.output});
        // The mirror is planned here: its elements are done, sunk or (!sink_mirrors) covered by
        // the caller, who adds the mirrored pairs.
        if (progress && units(mirrored)) progress->add(units(mirrored));
    });
}

}  // namespace hpcml::detail::similarity

namespace hpcml {

using detail::similarity::cpu_auto_problem;
using detail::similarity::CpuDelivery;
using detail::similarity::entry_point;
using detail::similarity::make_plan;
using detail::similarity::make_problem;
using detail::similarity::method_for;

namespace {

using detail::similarity::region_of;

// Rows from row0 and columns from col0 of a packed n x m output `out`, as a region's output.
RegionOutput output_at(void* out, const Problem& p, std::size_t row0, std::size_t col0) {
    const std::size_t out_row_bytes = detail::similarity::row_bytes(p.m, p.output);
    return {static_cast<unsigned char*>(out) + row0 * out_row_bytes + detail::similarity::row_bytes(col0, p.output),
            out_row_bytes};
}

// The CPU backend into the caller's output: in one region whatever the tile where the method
// allows (whole_output_on_cpu; where y is x, a method with symmetry computes the diagonal
// region's blocks on and above the diagonal and mirrors them), else tile by tile.
void run_cpu_into(const Problem& p, std::optional<std::size_t> tile_option, Method method, void* out,
                  detail::MemoryTracker& tracker, detail::Progress* progress) {
    const detail::similarity::MethodEntry& entry = detail::similarity::method_entry(method);
    if (entry.whole_output_on_cpu)
        return entry.cpu(p, {0, 0, p.n, p.m}, output_at(out, p, 0, 0), tracker, progress, nullptr);
    make_plan(p, tile_option, Backend::Cpu).tiles.for_each_band(1, [&](const SimilarityPlannedTile& tile) {
        entry.cpu(p, detail::similarity::region_of(tile), output_at(out, p, tile.row0, tile.col0), tracker, progress,
                  nullptr);
    });
}

RunStats run(MatrixView x, MatrixView y, void* out, const SimilarityTileSink* sink, const SimilarityOptions& options) {
    const Problem p = make_problem(x, y, options);
    detail::require(sink || out || p.n == 0 || p.m == 0, "out: null output pointer");
    detail::require(!sink || static_cast<bool>(*sink), "sink: empty callback");
    detail::Progress progress(options, std::uint64_t{p.n} * p.m);
    const RunStats stats = detail::dispatch(
        options, entry_point("similarity", p, options, false, sink ? CpuDelivery::Sink : CpuDelivery::Output),
        [&](detail::MemoryTracker& tracker) {
            const Method method =
                method_for(cpu_auto_problem(p, options.tile, sink ? CpuDelivery::Sink : CpuDelivery::Output),
                           options.method, Backend::Cpu);
            if (sink) {
                run_cpu_to_sink(p, options.tile, method, *sink, tracker, &progress);
            } else {
                run_cpu_into(p, options.tile, method, out, tracker, &progress);
            }
        },
        [&](const Context& context, detail::MemoryTracker& tracker) {
            // Tiles count as done once delivered: to the sink, or into the caller's output.
            const TilePlan plan = make_plan(p, options.tile, Backend::Cuda);
            const Method method = method_for(p, options.method, Backend::Cuda, context.device);
            if (sink) {
                const SimilarityTileSink deliver = [&](const SimilarityTile& tile) {
                    (*sink)(tile);
                    progress.add(std::uint64_t{tile.rows} * tile.cols);
                };
                detail::similarity::cuda_run_host(p, plan, method, deliver, context, tracker);
            } else {
                const std::function<void(std::uint64_t)> delivered = [&](std::uint64_t n) { progress.add(n); };
                detail::similarity::cuda_run_host_into(p, plan, method, static_cast<unsigned char*>(out), delivered,
                                                       context, tracker);
            }
        });
    progress.finish();
    return stats;
}

}  // namespace

RunStats similarity(MatrixView x, MatrixView y, void* out, const SimilarityOptions& options) {
    return run(x, y, out, nullptr, options);
}

RunStats similarity(MatrixView x, MatrixView y, const SimilarityTileSink& sink, const SimilarityOptions& options) {
    return run(x, y, nullptr, &sink, options);
}

void similarity_transpose(const SimilarityTile& tile, void* dst, std::size_t dst_row_stride_bytes) {
    using detail::require;
    using detail::similarity::row_bytes;
    require(tile.output != SimilarityOutput::Default, "tile: output must be a concrete type, not default");
    if (tile.rows == 0 || tile.cols == 0) return;
    require(tile.data != nullptr, "tile: null data pointer");
    require(dst != nullptr, "dst: null pointer");
    require(tile.row_stride_bytes >= row_bytes(tile.cols, tile.output),
            "tile: row stride " + std::to_string(tile.row_stride_bytes) + " is shorter than a row of " +
                std::to_string(tile.cols));
    require(dst_row_stride_bytes >= row_bytes(tile.rows, tile.output),
            "dst_row_stride_bytes: " + std::to_string(dst_row_stride_bytes) + " is shorter than a row of " +
                std::to_string(tile.rows));
    // Rows are written while others are read, by several threads: the two must not overlap.
    const auto* src_begin = static_cast<const unsigned char*>(tile.data);
    const auto* src_end = src_begin + (tile.rows - 1) * tile.row_stride_bytes + row_bytes(tile.cols, tile.output);
    const auto* dst_begin = static_cast<const unsigned char*>(dst);
    const auto* dst_end = dst_begin + (tile.cols - 1) * dst_row_stride_bytes + row_bytes(tile.rows, tile.output);
    require(std::less<>{}(dst_end, src_begin + 1) || std::less<>{}(src_end, dst_begin + 1),
            "dst: overlaps the tile's data");
    detail::similarity::cpu_transpose(Problem{.output = tile.output},
                                      {const_cast<void*>(tile.data), tile.row_stride_bytes}, tile.rows, tile.cols,
                                      {dst, dst_row_stride_bytes});
}

RunStats similarity_device(MatrixView x, MatrixView y, void* out, const SimilarityOptions& options) {
    const Problem p = make_problem(x, y, options);
    detail::require(out || p.n == 0 || p.m == 0, "out: null output pointer");
    detail::require_aligned(p.x, "x");
    detail::require_aligned(p.y, "y");
    detail::require_aligned(out, similarity_output_info(p.output).element_bytes, "out");
    return detail::dispatch(
        options, entry_point("similarity_device", p, options, true), [](detail::MemoryTracker&) {},
        [&](const Context& context, detail::MemoryTracker& tracker) {
            detail::require_device_pointer(x.data, context.device, "x");
            detail::require_device_pointer(y.data, context.device, "y");
            detail::require_output_pointer(out, context.device, "out");
            detail::similarity::cuda_run_device(p, make_plan(p, options.tile, Backend::Cuda),
                                                method_for(p, options.method, Backend::Cuda, context.device), out,
                                                context, tracker);
        });
}

}  // namespace hpcml
