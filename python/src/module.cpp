// hpcml._hpcml: the nanobind module behind the `hpcml` package.
// hpcml::Error maps to ValueError (InvalidArgument), MemoryError (OutOfMemory) and
// RuntimeError (NoDevice, DriverTooOld, Cuda, Internal).
#include <hpcml/hpcml.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/chrono.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

#include <Python.h>

namespace nb = nanobind;

namespace {

nb::dict device_dict(const hpcml::DeviceInfo& d) {
    nb::dict out;
    out["index"] = d.index;
    out["name"] = d.name;
    out["pci_bus_id"] = d.pci_bus_id;
    out["integrated"] = d.integrated;
    out["compute_capability"] = nb::make_tuple(d.compute_capability_major, d.compute_capability_minor);
    out["multiprocessors"] = d.multiprocessor_count;
    out["global_memory_bytes"] = d.total_global_memory_bytes;
    out["l2_cache_bytes"] = d.l2_cache_bytes;
    out["shared_memory_per_block_bytes"] = d.shared_memory_per_block_bytes;
    out["shared_memory_per_block_optin_bytes"] = d.shared_memory_per_block_optin_bytes;
    out["shared_memory_per_multiprocessor_bytes"] = d.shared_memory_per_multiprocessor_bytes;
    out["sm_clock_khz"] = d.sm_clock_khz;
    out["memory_clock_khz"] = d.memory_clock_khz;
    out["memory_bus_width_bits"] = d.memory_bus_width_bits;
    out["peak_memory_bandwidth_gbps"] = d.peak_memory_bandwidth_gbps;
    out["usable"] = d.usable;
    out["unusable_reason"] = d.unusable_reason;
    return out;
}

using FloatMatrix = nb::ndarray<const float, nb::ndim<2>, nb::c_contig>;
using AnyArray = nb::ndarray<nb::c_contig>;

hpcml::MatrixView view(const FloatMatrix& a) { return {a.data(), a.shape(0), a.shape(1)}; }

// A Python callable (or None) as ExecutionOptions::progress. It is called with the interpreter's
// lock taken, since the calls run with it released; held by handle (the caller's argument keeps
// it alive), since options are copied where the lock is not held.
void set_progress(hpcml::ExecutionOptions& o, nb::handle callback, double interval) {
    o.progress_interval = interval;
    if (callback.is_none()) return;
    o.progress = [callback](std::uint64_t done, std::uint64_t total) {
        nb::gil_scoped_acquire gil;
        callback(done, total);
    };
}

hpcml::SimilarityOptions similarity_options(float threshold, const std::string& mode, std::optional<std::size_t> tile,
                                            const std::string& backend, const std::string& method,
                                            const std::string& dtype, int device, std::uintptr_t stream) {
    hpcml::SimilarityOptions o;
    o.threshold = threshold;
    o.mode = hpcml::parse_similarity_mode(mode, "mode");
    o.output = hpcml::parse_similarity_output(dtype, "dtype");
    o.tile = tile;
    o.backend = hpcml::parse_backend(backend, "backend");
    o.method = hpcml::parse_method(method, "method");
    o.device = device;
    o.stream = reinterpret_cast<void*>(stream);
    return o;
}

nb::dict stats_dict(const hpcml::RunStats& stats) {
    nb::dict out;
    out["backend"] = std::string(hpcml::to_string(stats.backend));
    out["method"] = std::string(hpcml::to_string(stats.method));
    out["seconds"] = stats.seconds;
    out["peak_device_bytes"] = stats.memory.peak_device_bytes;
    out["peak_host_bytes"] = stats.memory.peak_host_bytes;
    return out;
}

// x, y (optional) and out are validated for shape and dtype by hpcml/_similarity.py (through
// hpcml/_arrays.py); the options are checked by the C++ API. Here only the byte count of out
// is checked again, as the C++ API writes exactly that many.
nb::dict similarity_binding(FloatMatrix x, std::optional<FloatMatrix> y, AnyArray out, float threshold,
                            const std::string& mode, std::optional<std::size_t> tile, const std::string& backend,
                            const std::string& method, const std::string& dtype, int device, bool on_device,
                            std::uintptr_t stream, nb::handle progress, double progress_interval) {
    hpcml::SimilarityOptions o = similarity_options(threshold, mode, tile, backend, method, dtype, device, stream);
    set_progress(o, progress, progress_interval);
    const hpcml::MatrixView xv = view(x);
    const hpcml::MatrixView yv = y ? view(*y) : hpcml::MatrixView{};
    const std::size_t m = y ? y->shape(1) : x.shape(1);
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

using GameBatch = nb::ndarray<const float, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

// A new NumPy array of `shape` owning its memory.
template <class T>
nb::ndarray<nb::numpy, T> new_array(std::initializer_list<std::size_t> shape) {
    std::size_t count = 1;
    for (std::size_t n : shape) count *= n;
    T* data = new T[count]();
    nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
    return nb::ndarray<nb::numpy, T>(data, shape.size(), shape.begin(), owner);
}

// The pairs as NumPy arrays (i, j and, in mode count, the counts), copied out of the vectors.
nb::dict similarity_pairs_binding(FloatMatrix x, std::optional<FloatMatrix> y, float threshold, const std::string& mode,
                                  std::size_t min_count, std::optional<std::size_t> tile, const std::string& backend,
                                  const std::string& method, int device, bool on_device, std::uintptr_t stream,
                                  nb::handle progress, double progress_interval) {
    hpcml::SimilarityOptions o = similarity_options(threshold, mode, tile, backend, method, "default", device, stream);
    set_progress(o, progress, progress_interval);
    const hpcml::MatrixView yv = y ? view(*y) : hpcml::MatrixView{};
    hpcml::SimilarityPairs pairs;
    {
        nb::gil_scoped_release release;
        pairs = on_device ? hpcml::similarity_pairs_device(view(x), yv, o, min_count)
                          : hpcml::similarity_pairs(view(x), yv, o, min_count);
    }
    auto copy = [](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        auto a = new_array<T>({v.size()});
        std::copy(v.begin(), v.end(), a.data());
        return a;
    };
    nb::dict out = stats_dict(pairs.stats);
    out["i"] = copy(pairs.i);
    out["j"] = copy(pairs.j);
    if (o.mode == hpcml::SimilarityMode::Count) out["count"] = copy(pairs.count);
    return out;
}

// The batch's results as arrays with a leading batch axis (one dict, not one per game: a
// batch of 1e5 small games is solved in a fraction of the time 1e5 dicts take to build).
nb::dict solve_games_binding(GameBatch A, int iterations, const std::string& variant, bool alternating,
                             const std::string& averaging, bool sampled, std::uint64_t seed, int record_every,
                             const std::string& backend, const std::string& method, int device, nb::handle progress,
                             double progress_interval) {
    hpcml::RegretOptions o;
    set_progress(o, progress, progress_interval);
    o.iterations = iterations;
    o.variant = hpcml::parse_regret_variant(variant, "variant");
    o.alternating = alternating;
    o.averaging = hpcml::parse_averaging(averaging, "averaging");
    o.sampled = sampled;
    o.rng_seed = seed;
    o.record_every = record_every;
    o.backend = hpcml::parse_backend(backend, "backend");
    o.method = hpcml::parse_method(method, "method");
    o.device = device;
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

hpcml::invgauss::InvGaussOptions ig_options(const std::string& backend, int device, std::uintptr_t stream = 0) {
    hpcml::invgauss::InvGaussOptions o;
    o.backend = hpcml::parse_backend(backend, "backend");
    o.device = device;
    o.stream = reinterpret_cast<void*>(stream);
    return o;
}

// x, mu, lam and out are 1-D contiguous arrays of one dtype (broadcast by hpcml/invgauss.py);
// mu and lam hold 1 or len(x) values.
template <class T>
nb::dict ig_evaluate_binding(const std::string& name, nb::ndarray<const T, nb::ndim<1>, nb::c_contig> x,
                             nb::ndarray<const T, nb::ndim<1>, nb::c_contig> mu,
                             nb::ndarray<const T, nb::ndim<1>, nb::c_contig> lam,
                             nb::ndarray<T, nb::ndim<1>, nb::c_contig> out, const std::string& backend, int device,
                             bool on_device, std::uintptr_t stream) {
    const auto f = hpcml::invgauss::parse_function(name, "function");
    const auto o = ig_options(backend, device, stream);
    hpcml::RunStats stats;
    {
        nb::gil_scoped_release release;
        stats = on_device ? hpcml::invgauss::evaluate_device(f, x.data(), x.shape(0), mu.data(), mu.shape(0),
                                                             lam.data(), lam.shape(0), out.data(), o)
                          : hpcml::invgauss::evaluate(f, x.data(), x.shape(0), mu.data(), mu.shape(0), lam.data(),
                                                      lam.shape(0), out.data(), o);
    }
    return stats_dict(stats);
}

template <class T>
nb::dict ig_sample_binding(nb::ndarray<const T, nb::ndim<1>, nb::c_contig> mu,
                           nb::ndarray<const T, nb::ndim<1>, nb::c_contig> lam, std::uint64_t seed,
                           nb::ndarray<T, nb::ndim<1>, nb::c_contig> out, const std::string& backend, int device,
                           bool on_device, std::uintptr_t stream) {
    const auto o = ig_options(backend, device, stream);
    hpcml::RunStats stats;
    {
        nb::gil_scoped_release release;
        const auto call = on_device ? &hpcml::invgauss::sample_device<T> : &hpcml::invgauss::sample<T>;
        stats = call(out.shape(0), mu.data(), mu.shape(0), lam.data(), lam.shape(0), seed, out.data(), o);
    }
    return stats_dict(stats);
}

using DoubleVector = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

nb::tuple ig_distance_binding(DoubleVector mu, DoubleVector lam, const std::string& metric, double lo, double hi,
                              std::size_t points, const std::string& method, const std::string& backend, int device) {
    if (mu.shape(0) != lam.shape(0))
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument, "lam: has " + std::to_string(lam.shape(0)) +
                                                                  " values but mu has " + std::to_string(mu.shape(0)));
    hpcml::invgauss::DistanceOptions o;
    o.metric = hpcml::invgauss::parse_metric(metric, "metric");
    o.grid_min = lo;
    o.grid_max = hi;
    o.grid_points = points;
    o.method = hpcml::parse_method(method, "method");
    o.backend = hpcml::parse_backend(backend, "backend");
    o.device = device;
    hpcml::invgauss::Distances d;
    {
        nb::gil_scoped_release release;
        d = hpcml::invgauss::distance_to_normal(mu.data(), lam.data(), mu.shape(0), o);
    }
    return nb::make_tuple(d.total_variation, d.kolmogorov, stats_dict(d.stats));
}

nb::dict summary_dict(const hpcml::telemetry::Summary& s) {
    nb::dict d;
    d["duration_s"] = s.duration_s;
    d["energy_j"] = s.energy_j;
    d["mean_power_w"] = s.mean_power_w;
    d["peak_power_w"] = s.peak_power_w;
    d["mean_gpu_util_percent"] = s.mean_gpu_util_percent;
    d["mean_memory_util_percent"] = s.mean_memory_util_percent;
    d["samples"] = s.samples;
    d["energy_from_counter"] = s.energy_from_counter;
    return d;
}

nb::dict samples_dict(const std::vector<hpcml::telemetry::Sample>& samples) {
    std::vector<double> columns[10];
    for (const auto& x : samples) {
        const double values[10] = {x.time_s,
                                   x.unix_time_s,
                                   x.temperature_c,
                                   x.power_w,
                                   x.power_percent,
                                   x.gpu_util_percent,
                                   x.memory_util_percent,
                                   x.memory_used_bytes,
                                   x.memory_used_percent,
                                   x.energy_j};
        for (int c = 0; c < 10; ++c) columns[c].push_back(values[c]);
    }
    static const char* names[10] = {"time_s",
                                    "unix_time_s",
                                    "temperature_c",
                                    "power_w",
                                    "power_percent",
                                    "gpu_util_percent",
                                    "memory_util_percent",
                                    "memory_used_bytes",
                                    "memory_used_percent",
                                    "energy_j"};
    nb::dict d;
    for (int c = 0; c < 10; ++c) d[names[c]] = columns[c];
    return d;
}

}  // namespace

NB_MODULE(_hpcml, m) {
    m.doc() = "hpcml: fused numerical kernels for CUDA and the CPU";
    m.attr("__version__") = hpcml::version();

    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const hpcml::Error& e) {
            PyObject* type = PyExc_RuntimeError;
            if (e.kind() == hpcml::ErrorKind::InvalidArgument) type = PyExc_ValueError;
            if (e.kind() == hpcml::ErrorKind::OutOfMemory) type = PyExc_MemoryError;
            PyErr_SetString(type, e.what());
        }
    });

    m.def(
        "devices",
        [] {
            nb::list out;
            for (const hpcml::DeviceInfo& d : hpcml::devices()) out.append(device_dict(d));
            return out;
        },
        "The usable CUDA devices, one dict each (an empty list on a machine without one).");

    m.def(
        "backends",
        [] {
            std::vector<std::string> out;
            for (hpcml::Backend b : hpcml::available_backends()) out.emplace_back(hpcml::to_string(b));
            return out;
        },
        "The backends usable now, 'cpu' first, then 'cuda' where a device exists.");

    m.def(
        "cuda_status",
        [] {
            const hpcml::DeviceQuery q = hpcml::query_devices();
            nb::dict out;
            out["status"] = std::string(hpcml::to_string(q.status));
            out["message"] = q.message;
            out["compiled"] = hpcml::cuda_compiled();
            out["driver_version"] = hpcml::format_cuda_version(q.driver_version);
            out["runtime_version"] = hpcml::format_cuda_version(q.runtime_version);
            out["cuda_architectures"] = hpcml::cuda_architectures();
            nb::list all;
            for (const hpcml::DeviceInfo& d : q.devices) all.append(device_dict(d));
            out["devices"] = all;
            return out;
        },
        "Why the CUDA backend is or is not usable: status, message, driver and runtime versions, the "
        "architectures this build has kernels for, and every visible device (usable or not, and why).");

    m.def("release_cached_memory", &hpcml::release_cached_memory,
          "Hands back the pinned staging blocks and unused device-pool memory hpcml keeps between calls.");

    m.def(
        "resolve_backend",
        [](const std::string& backend, int device) {
            return std::string(hpcml::to_string(hpcml::make_context(hpcml::parse_backend(backend), device).backend));
        },
        nb::arg("backend") = "auto", nb::arg("device") = 0,
        "The backend 'auto', 'cpu' or 'cuda' resolves to here; raises RuntimeError for 'cuda' "
        "without a usable device.");

    m.def("_similarity", &similarity_binding, nb::arg("x"), nb::arg("y").none(), nb::arg("out"), nb::arg("threshold"),
          nb::arg("mode"), nb::arg("tile").none(), nb::arg("backend"), nb::arg("method"), nb::arg("dtype"),
          nb::arg("device"), nb::arg("on_device"), nb::arg("stream"), nb::arg("progress").none(),
          nb::arg("progress_interval"), "Low-level similarity into a preallocated output; use hpcml.similarity.");

    m.def("_similarity_pairs", &similarity_pairs_binding, nb::arg("x"), nb::arg("y").none(), nb::arg("threshold"),
          nb::arg("mode"), nb::arg("min_count"), nb::arg("tile").none(), nb::arg("backend"), nb::arg("method"),
          nb::arg("device"), nb::arg("on_device"), nb::arg("stream"), nb::arg("progress").none(),
          nb::arg("progress_interval"), "Low-level pair list; use hpcml.similarity_pairs.");
    m.def(
        "similarity_cpu_kernel", [] { return std::string(hpcml::similarity_cpu_kernel()); },
        "The instruction set the CPU backend's fused similarity kernel uses here: 'avx512', 'avx2' or 'baseline' "
        "(HPCML_SIMILARITY_CPU_KERNEL=avx2 or =baseline in the environment caps the choice).");
    m.def(
        "_similarity_layout",
        [](const std::string& mode, const std::string& dtype, std::size_t n, std::size_t m) {
            hpcml::SimilarityOptions o;
            o.mode = hpcml::parse_similarity_mode(mode, "mode");
            o.output = hpcml::parse_similarity_output(dtype, "dtype");
            const hpcml::SimilarityOutput output = hpcml::resolve_output(o);
            const auto shape = hpcml::similarity_output_shape(n, m, output);
            return nb::make_tuple(std::string(hpcml::to_string(output)), nb::make_tuple(shape[0], shape[1]),
                                  std::string(hpcml::similarity_output_info(output).numpy_dtype));
        },
        nb::arg("mode"), nb::arg("dtype"), nb::arg("n"), nb::arg("m"),
        "(output, shape, NumPy dtype) of S for an n x m result, the output resolved as the C++ API does "
        "('default': the mode's own), checking both names; Python allocates the output from it.");

    m.def("_solve_matrix_games", &solve_games_binding, nb::arg("A"), nb::arg("iterations"), nb::arg("variant"),
          nb::arg("alternating"), nb::arg("averaging"), nb::arg("sampled"), nb::arg("seed"), nb::arg("record_every"),
          nb::arg("backend"), nb::arg("method"), nb::arg("device"), nb::arg("progress").none(),
          nb::arg("progress_interval"), "Low-level batched regret matching; use hpcml.solve_matrix_game(s).");

    m.def(
        "_telemetry_status",
        [](int device) {
            const hpcml::telemetry::Status st = hpcml::telemetry::status(device);
            nb::dict d;
            d["status"] = std::string(hpcml::telemetry::to_string(st.availability));
            d["message"] = st.message;
            d["device_name"] = st.device_name;
            return d;
        },
        nb::arg("device") = 0);
    nb::class_<hpcml::telemetry::Sampler>(m, "_TelemetrySampler")
        .def(nb::init<int, std::chrono::milliseconds>(), nb::arg("device"), nb::arg("interval"))
        .def("start", &hpcml::telemetry::Sampler::start)
        .def("stop",
             [](hpcml::telemetry::Sampler& s) {
                 hpcml::telemetry::Summary summary;
                 {
                     nb::gil_scoped_release release;
                     summary = s.stop();
                 }
                 return summary_dict(summary);
             })
        .def("samples", [](const hpcml::telemetry::Sampler& s) { return samples_dict(s.samples()); })
        .def("device_name", &hpcml::telemetry::Sampler::device_name);

    m.def(
        "_ig_functions",
        [] {
            std::vector<std::string> names;
            for (const auto f : hpcml::invgauss::functions()) names.emplace_back(hpcml::invgauss::to_string(f));
            return names;
        },
        "The inverse Gaussian's elementwise functions, by name, as the library's table lists them.");
    m.def("_ig_evaluate", &ig_evaluate_binding<double>, nb::arg("name"), nb::arg("x"), nb::arg("mu"), nb::arg("lam"),
          nb::arg("out"), nb::arg("backend"), nb::arg("device"), nb::arg("on_device"), nb::arg("stream"));
    m.def("_ig_evaluate", &ig_evaluate_binding<float>, nb::arg("name"), nb::arg("x"), nb::arg("mu"), nb::arg("lam"),
          nb::arg("out"), nb::arg("backend"), nb::arg("device"), nb::arg("on_device"), nb::arg("stream"));
    m.def("_ig_sample", &ig_sample_binding<double>, nb::arg("mu"), nb::arg("lam"), nb::arg("seed"), nb::arg("out"),
          nb::arg("backend"), nb::arg("device"), nb::arg("on_device"), nb::arg("stream"));
    m.def("_ig_sample", &ig_sample_binding<float>, nb::arg("mu"), nb::arg("lam"), nb::arg("seed"), nb::arg("out"),
          nb::arg("backend"), nb::arg("device"), nb::arg("on_device"), nb::arg("stream"));
    m.def("_ig_distance", &ig_distance_binding, nb::arg("mu"), nb::arg("lam"), nb::arg("metric"), nb::arg("lo"),
          nb::arg("hi"), nb::arg("points"), nb::arg("method"), nb::arg("backend"), nb::arg("device"));
}
