// hpcml._hpcml: the inverse Gaussian (hpcml/invgauss.py wraps it).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"

namespace hpcml_python {

namespace {

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
                           nb::ndarray<const T, nb::ndim<1>, nb::c_contig> lam, std::uint64_t seed, std::uint64_t first,
                           nb::ndarray<T, nb::ndim<1>, nb::c_contig> out, const std::string& backend, int device,
                           bool on_device, std::uintptr_t stream) {
    auto o = ig_options(backend, device, stream);
    o.first_draw = first;
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

}  // namespace

void bind_invgauss(nb::module_& m) {
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
    m.def("_ig_sample", &ig_sample_binding<double>, nb::arg("mu"), nb::arg("lam"), nb::arg("seed"), nb::arg("first"),
          nb::arg("out"), nb::arg("backend"), nb::arg("device"), nb::arg("on_device"), nb::arg("stream"));
    m.def("_ig_sample", &ig_sample_binding<float>, nb::arg("mu"), nb::arg("lam"), nb::arg("seed"), nb::arg("first"),
          nb::arg("out"), nb::arg("backend"), nb::arg("device"), nb::arg("on_device"), nb::arg("stream"));
    m.def("_ig_distance", &ig_distance_binding, nb::arg("mu"), nb::arg("lam"), nb::arg("metric"), nb::arg("lo"),
          nb::arg("hi"), nb::arg("points"), nb::arg("method"), nb::arg("backend"), nb::arg("device"));
}

}  // namespace hpcml_python
