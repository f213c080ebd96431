// The public similarity entry points: argument checks, backend choice, output tiling.
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
#include "pairs.hpp"

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

namespace {

// Checks every argument and returns the problem the backends see (which none of them changes).
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

// The tiles a call's output goes in (the public plan, similarity_tile_plan; symmetric where the
// method uses y = x). Unset tile: on the CPU the whole output in one region, a pair list's in
// 2048 x 2048 tiles (a 512 KiB bitmask, in the L2 cache as it is scanned); on the GPU 1024 x 1024
// tiles (a batch per launch), so that its staging memory stays small for any output size.
TilePlan make_plan(const Problem& p, std::optional<std::size_t> tile, Backend backend, bool symmetric = false,
                   bool pairs = false) {
    const std::size_t whole = std::max<std::size_t>({p.n, p.m, 1});
    const std::size_t unset = backend == Backend::Cuda ? 1024 : pairs ? 2048 : whole;
    return TilePlan(similarity_tile_plan(p.n, p.m, tile.value_or(unset), p.output, symmetric));
}

// The method a call runs where it asked for `requested` (methods.hpp): on the CPU Auto is the
// cost model's choice (docs/similarity.md); on a CUDA device, cuda_method's.
Method method_for(const Problem& p, Method requested, Backend backend, int device = 0) {
    using namespace detail::similarity;
    if (backend == Backend::Cuda) return cuda_method(p, requested, cuda_max_shared_per_block(device));
    return method_on_cpu(p, requested);
}

// What the similarity entry points accept of ExecutionOptions; on a CUDA device, the method's
// refusals are checked with the plan its calls run (make_plan), before any launch.
detail::EntryPoint entry_point(std::string_view name, const Problem& p, const SimilarityOptions& options,
                               bool device_memory = false) {
    return {.name = name,
            .takes_stream = device_memory,
            .methods = detail::similarity::kMethodList,
            .device_memory = device_memory,
            .reports_progress = !device_memory,
            .shape = {p.samples, p.n, p.m},
            .auto_on_cpu = method_for(p, Method::Auto, Backend::Cpu),
            .on_cuda_method = [&p, &options](Method requested, int device) {
                return detail::similarity::cuda_method_checked(p, make_plan(p, options.tile, Backend::Cuda), requested,
                                                               device);
            }};
}

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
    for (const SimilarityPlannedTile& tile : make_plan(p, tile_option, Backend::Cpu).tiles.bands(1))
        entry.cpu(p, detail::similarity::region_of(tile), output_at(out, p, tile.row0, tile.col0), tracker, progress,
                  nullptr);
}

// The CPU backend to a sink, through a tile buffer. Where y is x (uses_symmetry) the method
// computes the tiles on and above the diagonal only (square tiles; the diagonal ones half) and
// hands each off-diagonal tile's mirror to the sink right after the tile itself (for a
// `pair_list`, not: the sink gets the tiles on and above the diagonal only, and adds the mirrored
// pairs itself).
void run_cpu_to_sink(const Problem& p, std::optional<std::size_t> tile_option, Method method,
                     const SimilarityTileSink& sink, detail::MemoryTracker& tracker, detail::Progress* progress,
                     bool pair_list = false) {
    using detail::similarity::row_bytes;
    const bool symmetric = detail::similarity::uses_symmetry(p, method);
    const bool sink_mirrors = !pair_list;
    const TilePlan plan = make_plan(p, tile_option, Backend::Cpu, symmetric, pair_list);
    const std::size_t tile_bytes = detail::checked_mul(plan.tile_rows, row_bytes(plan.tile_cols, p.output), "tile");
    detail::HostBuffer<unsigned char> tile_buffer(tracker, tile_bytes, "similarity tile buffer"), mirror_buffer;
    if (sink_mirrors && symmetric && plan.tiles.row_blocks.size() > 1)
        mirror_buffer = detail::HostBuffer<unsigned char>(tracker, tile_bytes, "similarity mirror tile buffer");
    for (const SimilarityPlannedTile& planned : plan.tiles.bands(1)) {  // a symmetric plan's from the diagonal on
        const Region region = detail::similarity::region_of(planned);
        const std::optional<SimilarityPlannedTile> mirrored =
            symmetric ? similarity_mirror_of(planned) : std::nullopt;  // none for a diagonal tile
        const bool mirror = mirrored && sink_mirrors;
        const RegionOutput tile{tile_buffer.data(), row_bytes(region.cols, p.output)};
        const RegionOutput back{mirror_buffer.data(), row_bytes(region.rows, p.output)};
        detail::similarity::method_entry(method).cpu(p, region, tile, tracker, progress, mirror ? &back : nullptr);
        sink(SimilarityTile{region.row0, region.col0, region.rows, region.cols, tile.data, tile.row_stride_bytes,
                            p.output});
        if (mirror)
            sink(SimilarityTile{mirrored->row0, mirrored->col0, mirrored->rows, mirrored->cols, back.data,
                                back.row_stride_bytes, p.output});
        // The mirror is planned here: its elements are done, sunk or (!sink_mirrors) covered by
        // the caller, who adds the mirrored pairs.
        if (progress && mirrored) progress->add(detail::similarity::units(detail::similarity::region_of(*mirrored)));
    }
}

RunStats run(MatrixView x, MatrixView y, void* out, const SimilarityTileSink* sink, const SimilarityOptions& options) {
    const Problem p = make_problem(x, y, options);
    detail::require(sink || out || p.n == 0 || p.m == 0, "out: null output pointer");
    detail::require(!sink || static_cast<bool>(*sink), "sink: empty callback");
    detail::Progress progress(options, std::uint64_t{p.n} * p.m);
    const RunStats stats = detail::dispatch(
        options, entry_point("similarity", p, options),
        [&](detail::MemoryTracker& tracker) {
            const Method method = method_for(p, options.method, Backend::Cpu);
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
    const detail::EntryPoint entry =
        on_device ? entry_point("similarity_pairs_device", p, o, true) : entry_point("similarity_pairs", p, o);
    const RunStats stats = detail::dispatch(
        o, entry,
        [&](detail::MemoryTracker& tracker) {
            if (none_pass) return progress.add(std::uint64_t{p.n} * p.m);  // nothing to compute
            // Mode All as a bitmask tile (a word of 64 columns tested at once); where y is x, the
            // tiles above the diagonal only, each pair added with its mirror.
            SimilarityOptions cpu = o;
            if (!count) cpu.output = SimilarityOutput::Bitmask;
            const Problem tiles = make_problem(x, y, cpu);
            const Method method = method_for(tiles, o.method, Backend::Cpu);
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
