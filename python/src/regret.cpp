// hpcml._hpcml: the game solver (hpcml/_regret.py wraps it).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "bindings.hpp"

namespace hpcml_python {

namespace {

using GameBatch = nb::ndarray<const float, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

// Regret's options by name: iterations, variant, alternating, averaging, sampled, seed,
// first_game, record_every (default 0) and the execution options.
hpcml::RegretOptions regret_options(Options& in) {
    hpcml::RegretOptions o;
    in.execution(o);
    o.iterations = in.take<int>("iterations");
    o.variant = hpcml::parse_regret_variant(in.take<std::string>("variant"), "variant");
    o.alternating = in.take<bool>("alternating");
    o.averaging = hpcml::parse_averaging(in.take<std::string>("averaging"), "averaging");
    o.sampled = in.take<bool>("sampled");
    o.rng_seed = in.take<std::uint64_t>("seed");
    o.first_game = in.take<std::uint64_t>("first_game");
    o.record_every = in.take_or<int>("record_every", 0);
    return o;
}

// The batch's results as arrays with a leading batch axis (one dict, not one per game: a
// batch of 1e5 small games is solved in a fraction of the time 1e5 dicts take to build).
nb::dict solve_games_binding(GameBatch A, nb::kwargs options) {
    Options in(std::move(options));
    const hpcml::RegretOptions o = regret_options(in);
    in.done();
    const std::size_t batch = A.shape(0), n1 = A.shape(1), n2 = A.shape(2);
    std::vector<hpcml::GameSolution> solutions;
    {
        nb::gil_scoped_release release;
        solutions = hpcml::solve_matrix_games(A.data(), batch, n1, n2, o);
    }
    const std::size_t records = solutions.front().curve.size();
    auto rows = new_array<double>({batch, n1});
    auto cols = new_array<double>({batch, n2});
    auto value = new_array<double>({batch});
    auto gap = new_array<double>({batch});
    auto eps = new_array<double>({batch});
    auto curve = new_array<double>({batch, records, 2});
    for (std::size_t b = 0; b < batch; ++b) {
        const hpcml::GameSolution& s = solutions[b];
        std::copy(s.row_strategy.begin(), s.row_strategy.end(), rows.data() + b * n1);
        std::copy(s.col_strategy.begin(), s.col_strategy.end(), cols.data() + b * n2);
        value.data()[b] = s.value;
        gap.data()[b] = s.gap;
        eps.data()[b] = s.eps_bound;
        for (std::size_t k = 0; k < records; ++k) {
            curve.data()[(b * records + k) * 2] = s.curve[k].iteration;
            curve.data()[(b * records + k) * 2 + 1] = s.curve[k].gap;
        }
    }
    nb::dict out;
    out["row_strategy"] = rows;
    out["col_strategy"] = cols;
    out["value"] = value;
    out["gap"] = gap;
    out["eps_bound"] = eps;
    out["eps_bound_valid"] = solutions.front().eps_bound_valid;
    out["curve"] = curve;
    out["stats"] = stats_dict(solutions.front().stats);
    return out;
}

using DeviceResult = nb::ndarray<double, nb::c_contig>;

// The device call on CUDA arrays (torch, CuPy): the results allocated by hpcml/_regret.py, their
// shapes checked again here, as the C++ call writes exactly these.
nb::dict solve_games_device_binding(nb::ndarray<const float, nb::ndim<3>, nb::c_contig> A, DeviceResult rows,
                                    DeviceResult cols, DeviceResult value, DeviceResult gap, DeviceResult eps_bound,
                                    std::optional<nb::ndarray<std::uint8_t, nb::ndim<1>, nb::c_contig>> workspace,
                                    nb::kwargs options) {
    Options in(std::move(options));
    const hpcml::RegretOptions o = regret_options(in);
    in.done();
    const std::size_t batch = A.shape(0), n1 = A.shape(1), n2 = A.shape(2);
    const std::pair<const char*, std::size_t> sizes[] = {{"row_strategy", batch * n1},
                                                         {"col_strategy", batch * n2},
                                                         {"value", batch},
                                                         {"gap", batch},
                                                         {"eps_bound", batch}};
    const DeviceResult* results[] = {&rows, &cols, &value, &gap, &eps_bound};
    for (int k = 0; k < 5; ++k)
        if (results[k]->size() != sizes[k].second)
            throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                               std::string(sizes[k].first) + ": has " + std::to_string(results[k]->size()) +
                                   " elements, needs " + std::to_string(sizes[k].second));
    nb::dict out;
    out["eps_bound_valid"] = hpcml::eps_bound_valid(o);
    hpcml::RunStats stats;
    {
        nb::gil_scoped_release release;
        stats = hpcml::solve_matrix_games_device(
            A.data(), batch, n1, n2, {rows.data(), cols.data(), value.data(), gap.data(), eps_bound.data()}, o,
            workspace ? workspace->data() : nullptr, workspace ? workspace->size() : 0);
    }
    out["stats"] = stats_dict(stats);
    return out;
}

}  // namespace

void bind_regret(nb::module_& m) {
    m.def("_solve_matrix_games", &solve_games_binding, nb::arg("A"), nb::arg("options"),
          "Low-level batched regret matching, options by name; use hpcml.solve_matrix_game(s).");
    m.def("_solve_matrix_games_device", &solve_games_device_binding, nb::arg("A"), nb::arg("row_strategy"),
          nb::arg("col_strategy"), nb::arg("value"), nb::arg("gap"), nb::arg("eps_bound"), nb::arg("workspace").none(),
          nb::arg("options"),
          "Low-level batched regret matching on CUDA arrays, options by name; use "
          "hpcml.solve_matrix_games.");
    m.def(
        "_solve_matrix_games_device_workspace",
        [](std::size_t batch, std::size_t n1, std::size_t n2, const std::string& backend, int device) {
            hpcml::RegretOptions o;
            o.backend = hpcml::parse_backend(backend, "backend");
            o.device = device;
            return hpcml::solve_matrix_games_device_workspace(batch, n1, n2, o);
        },
        nb::arg("batch"), nb::arg("n1"), nb::arg("n2"), nb::arg("backend"), nb::arg("device"),
        "Bytes of device workspace _solve_matrix_games_device needs (0 for games of at most 64 actions).");
}

}  // namespace hpcml_python
