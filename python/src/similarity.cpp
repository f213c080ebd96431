// hpcml._hpcml: the similarity calls (hpcml/_similarity.py wraps them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include "bindings.hpp"

namespace hpcml_python {

namespace {

using FloatMatrix = nb::ndarray<const float, nb::ndim<2>, nb::c_contig>;
using AnyArray = nb::ndarray<nb::c_contig>;

hpcml::MatrixView view(const FloatMatrix& a) { return {a.data(), a.shape(0), a.shape(1)}; }

// Similarity's options by name: threshold, mode, dtype (default "default"), tile (None: the
// backend's) and the execution options.
hpcml::SimilarityOptions similarity_options(Options& in) {
    hpcml::SimilarityOptions o;
    in.execution(o);
    o.threshold = in.take<float>("threshold");
    o.mode = hpcml::parse_similarity_mode(in.take<std::string>("mode"), "mode");
    o.output = hpcml::parse_similarity_output(in.take_or<std::string>("dtype", "default"), "dtype");
    o.tile = in.take_optional<std::size_t>("tile");
    return o;
}

// x, y (optional) and out are validated for shape and dtype by hpcml/_similarity.py (through
// hpcml/_arrays.py); the options are checked by the C++ API. Here only the byte count of out
// is checked again, as the C++ API writes exactly that many.
nb::dict similarity_binding(FloatMatrix x, std::optional<FloatMatrix> y, AnyArray out, bool on_device,
                            nb::kwargs options) {
    Options in(std::move(options));
    const hpcml::SimilarityOptions o = similarity_options(in);
    in.done();
    const hpcml::MatrixView xv = view(x);
    const hpcml::MatrixView yv = y ? view(*y) : hpcml::MatrixView{};
    const std::size_t m = y ? y->shape(1) : x.shape(1);
    hpcml::check_similarity_options(o, x.shape(0), "dtype");  // named as Python's callers know it
    const std::size_t needed = hpcml::similarity_output_bytes(x.shape(1), m, hpcml::resolve_output(o));
    if (out.nbytes() != needed) {
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                           "out: has " + std::to_string(out.nbytes()) + " bytes, needs " + std::to_string(needed));
    }
    hpcml::RunStats stats;
    {
        nb::gil_scoped_release release;
        stats = on_device ? hpcml::similarity_device(xv, yv, out.data(), o) : hpcml::similarity(xv, yv, out.data(), o);
    }
    return stats_dict(stats);
}

// The pairs as NumPy arrays (i, j and, in mode count, the counts), copied out of the vectors.
nb::dict similarity_pairs_binding(FloatMatrix x, std::optional<FloatMatrix> y, bool on_device, nb::kwargs options) {
    Options in(std::move(options));
    const hpcml::SimilarityOptions o = similarity_options(in);
    const auto min_count = in.take<std::size_t>("min_count");
    in.done();
    const hpcml::MatrixView yv = y ? view(*y) : hpcml::MatrixView{};
    hpcml::SimilarityPairs pairs;
    {
        nb::gil_scoped_release release;
        pairs = on_device ? hpcml::similarity_pairs_device(view(x), yv, o, min_count)
                          : hpcml::similarity_pairs(view(x), yv, o, min_count);
    }
    // Indices as int64, NumPy's index type (np.nonzero's): i - j must not wrap around. An index
    // is below an array dimension, so it fits.
    auto copy = [](const auto& v, auto as) {
        auto a = new_array<decltype(as)>({v.size()});
        std::copy(v.begin(), v.end(), a.data());
        return a;
    };
    nb::dict out = stats_dict(pairs.stats);
    out["i"] = copy(pairs.i, std::int64_t{});
    out["j"] = copy(pairs.j, std::int64_t{});
    if (o.mode == hpcml::SimilarityMode::Count) out["count"] = copy(pairs.count, std::int32_t{});
    return out;
}

// The pairs left on the device: `allocate(pairs)` (a Python callable, called once with the GIL
// held) returns the device addresses (i, j, count) the pairs are written to, as integers.
nb::dict similarity_pairs_on_device_binding(FloatMatrix x, std::optional<FloatMatrix> y, nb::callable allocate,
                                            nb::kwargs options) {
    Options in(std::move(options));
    const hpcml::SimilarityOptions o = similarity_options(in);
    const auto min_count = in.take<std::size_t>("min_count");
    in.done();
    const hpcml::SimilarityDevicePairsAllocator into = [&allocate](std::size_t pairs) {
        nb::gil_scoped_acquire gil;
        const auto [i, j, count] =
            nb::cast<std::tuple<std::uintptr_t, std::uintptr_t, std::uintptr_t>>(allocate(pairs));
        return hpcml::SimilarityDevicePairs{reinterpret_cast<std::int64_t*>(i), reinterpret_cast<std::int64_t*>(j),
                                            reinterpret_cast<std::int32_t*>(count)};
    };
    hpcml::RunStats stats;
    {
        nb::gil_scoped_release release;
        stats = hpcml::similarity_pairs_on_device(view(x), y ? view(*y) : hpcml::MatrixView{}, into, o, min_count);
    }
    return stats_dict(stats);
}

}  // namespace

void bind_similarity(nb::module_& m) {
    m.def("_similarity", &similarity_binding, nb::arg("x"), nb::arg("y").none(), nb::arg("out"), nb::arg("on_device"),
          nb::arg("options"),
          "Low-level similarity into a preallocated output, options by name; use hpcml.similarity.");
    m.def("_similarity_pairs", &similarity_pairs_binding, nb::arg("x"), nb::arg("y").none(), nb::arg("on_device"),
          nb::arg("options"), "Low-level pair list, options by name; use hpcml.similarity_pairs.");
    m.def("_similarity_pairs_on_device", &similarity_pairs_on_device_binding, nb::arg("x"), nb::arg("y").none(),
          nb::arg("allocate"), nb::arg("options"),
          "Low-level pair list left on the device (CUDA arrays), options by name: allocate(pairs) returns the "
          "device addresses (i, j, count) to write to; hpcml.torch.similarity_pairs uses it.");
    m.def(
        "_similarity_transpose",
        [](nb::ndarray<const std::uint8_t, nb::ndim<2>, nb::c_contig> tile, const std::string& dtype, std::size_t rows,
           std::size_t cols, nb::ndarray<std::uint8_t, nb::ndim<2>, nb::c_contig> out) {
            hpcml::SimilarityTile t;
            t.rows = rows;
            t.cols = cols;
            t.data = tile.data();
            t.row_stride_bytes = tile.shape(1);
            t.output = hpcml::parse_similarity_output(dtype, "dtype");
            const std::size_t tile_row = hpcml::similarity_output_bytes(1, cols, t.output);
            const std::size_t out_row = hpcml::similarity_output_bytes(1, rows, t.output);
            if (tile.shape(0) != rows || tile.shape(1) != tile_row || out.shape(0) != cols || out.shape(1) != out_row)
                throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                                   "tile: " + std::to_string(tile.shape(0)) + " x " + std::to_string(tile.shape(1)) +
                                       " bytes and out " + std::to_string(out.shape(0)) + " x " +
                                       std::to_string(out.shape(1)) + " bytes do not hold a " + std::to_string(rows) +
                                       " x " + std::to_string(cols) + " tile and its mirror");
            nb::gil_scoped_release release;
            hpcml::similarity_transpose(t, out.data(), out_row);
        },
        nb::arg("tile"), nb::arg("dtype"), nb::arg("rows"), nb::arg("cols"), nb::arg("out"),
        "out = the mirror of a rows x cols tile of S (its bytes, rows packed), as the C++ similarity_transpose "
        "(threaded; bitmask by bit blocks); hpcml.dask's mirrored tiles.");
    m.def(
        "_similarity_tile_plan",
        [](const std::string& mode, const std::string& dtype, std::size_t n, std::size_t m, bool symmetric,
           std::optional<std::size_t> tile,
           std::optional<std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> blocks) {
            hpcml::SimilarityOptions o;
            o.mode = hpcml::parse_similarity_mode(mode, "mode");
            o.output = hpcml::parse_similarity_output(dtype, "dtype");
            const hpcml::SimilarityOutput output = hpcml::resolve_output(o);
            if (tile.has_value() == blocks.has_value())
                throw hpcml::Error(hpcml::ErrorKind::InvalidArgument, "chunks: give a tile edge or blocks, not both");
            const hpcml::SimilarityTilePlan plan =
                tile ? hpcml::similarity_tile_plan(n, m, *tile, output, symmetric)
                     : hpcml::similarity_tile_plan(n, m, blocks->first, blocks->second, output, symmetric, "chunks");
            std::vector<std::size_t> widths;  // a tile row's elements, per column block
            for (const std::size_t cols : plan.col_blocks)
                widths.push_back(hpcml::similarity_output_shape(1, cols, output)[1]);
            nb::list tiles;
            for (const hpcml::SimilarityPlannedTile& t : plan.tiles())
                tiles.append(nb::make_tuple(t.row_block, t.col_block, t.row0, t.rows, t.col0, t.cols,
                                            t.role == hpcml::SimilarityTileRole::Mirror     ? "mirror"
                                            : t.role == hpcml::SimilarityTileRole::Diagonal ? "diagonal"
                                                                                            : "computed"));
            return nb::make_tuple(plan.row_blocks, plan.col_blocks, widths, tiles);
        },
        nb::arg("mode"), nb::arg("dtype"), nb::arg("n"), nb::arg("m"), nb::arg("symmetric"),
        nb::arg("tile") = nb::none(), nb::arg("blocks") = nb::none(),
        "(row blocks, column blocks, each column block's width in output elements, tiles) of the C++ tile plan "
        "(similarity_tile_plan) of an n x m result cut by a tile edge or given (row, column) blocks; each tile "
        "(row block, column block, row0, rows, col0, cols, role: computed, diagonal or mirror). hpcml.dask's graph.");
    m.def(
        "_similarity_layout",
        [](const std::string& mode, const std::string& dtype, std::size_t n, std::size_t m) {
            hpcml::SimilarityOptions o;
            o.mode = hpcml::parse_similarity_mode(mode, "mode");
            o.output = hpcml::parse_similarity_output(dtype, "dtype");
            const hpcml::SimilarityOutput output = hpcml::resolve_output(o);
            const auto shape = hpcml::similarity_output_shape(n, m, output);
            const hpcml::SimilarityOutputInfo info = hpcml::similarity_output_info(output);
            return nb::make_tuple(std::string(hpcml::to_string(output)), nb::make_tuple(shape[0], shape[1]),
                                  std::string(info.numpy_dtype), info.columns_per_element);
        },
        nb::arg("mode"), nb::arg("dtype"), nb::arg("n"), nb::arg("m"),
        "(output, shape, NumPy dtype, columns per element) of S for an n x m result, the output resolved as "
        "the C++ API does ('default': the mode's own), checking both names; Python allocates the output from it.");
}

}  // namespace hpcml_python
