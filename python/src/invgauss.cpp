// hpcml._hpcml: the inverse Gaussian (hpcml/invgauss.py wraps it).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"

namespace hpcml_python {

namespace {

// The inverse Gaussian's execution options by name (backend, device, stream).
hpcml::invgauss::InvGaussOptions ig_options(Options& in) {
    hpcml::invgauss::InvGaussOptions o;
    in.execution(o);
    return o;
}

// x, mu, lam and out are 1-D contiguous arrays of one dtype (broadcast by hpcml/invgauss.py);
// mu and lam hold 1 or len(x) values.
template <class T>
nb::dict ig_evaluate_binding(const std::string& name, nb::ndarray<const T, nb::ndim<1>, nb::c_contig> x,
                             nb::ndarray<const T, nb::ndim<1>, nb::c_contig> mu,
                             nb::ndarray<const T, nb::ndim<1>, nb::c_contig> lam,
                             nb::ndarray<T, nb::ndim<1>, nb::c_contig> out, bool on_device, nb::kwargs options) {
    const auto f = hpcml::invgauss::parse_function(name, "function");
    Options in(std::move(options));
    const auto o = ig_options(in);
    in.done();
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
                           nb::ndarray<const T, nb::ndim<1>, nb::c_contig> lam,
                           nb::ndarray<T, nb::ndim<1>, nb::c_contig> out, bool on_device, nb::kwargs options) {
    Options in(std::move(options));
    auto o = ig_options(in);
    o.first_draw = in.take<std::uint64_t>("first");
    const auto seed = in.take<std::uint64_t>("seed");
    in.done();
    hpcml::RunStats stats;
    {
        nb::gil_scoped_release release;
        const auto call = on_device ? &hpcml::invgauss::sample_device<T> : &hpcml::invgauss::sample<T>;
        stats = call(out.shape(0), mu.data(), mu.shape(0), lam.data(), lam.shape(0), seed, out.data(), o);
    }
    return stats_dict(stats);
}

using DoubleVector = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

nb::tuple ig_distance_binding(DoubleVector mu, DoubleVector lam, nb::kwargs options) {
    if (mu.shape(0) != lam.shape(0))
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument, "lam: has " + std::to_string(lam.shape(0)) +
                                                                  " values but mu has " + std::to_string(mu.shape(0)));
    Options in(std::move(options));
    hpcml::invgauss::DistanceOptions o;
    in.execution(o);
    o.metric = hpcml::invgauss::parse_metric(in.take<std::string>("metric"), "metric");
    o.grid_min = in.take<double>("lo");
    o.grid_max = in.take<double>("hi");
    o.grid_points = in.take<std::size_t>("points");
    in.done();
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
    // Options by name: backend, device, stream; sampling adds seed and first; the distances
    // metric, lo, hi, points, method, backend and device.
    m.def("_ig_evaluate", &ig_evaluate_binding<double>, nb::arg("name"), nb::arg("x"), nb::arg("mu"), nb::arg("lam"),
          nb::arg("out"), nb::arg("on_device"), nb::arg("options"));
    m.def("_ig_evaluate", &ig_evaluate_binding<float>, nb::arg("name"), nb::arg("x"), nb::arg("mu"), nb::arg("lam"),
          nb::arg("out"), nb::arg("on_device"), nb::arg("options"));
    m.def("_ig_sample", &ig_sample_binding<double>, nb::arg("mu"), nb::arg("lam"), nb::arg("out"), nb::arg("on_device"),
          nb::arg("options"));
    m.def("_ig_sample", &ig_sample_binding<float>, nb::arg("mu"), nb::arg("lam"), nb::arg("out"), nb::arg("on_device"),
          nb::arg("options"));
    m.def("_ig_distance", &ig_distance_binding, nb::arg("mu"), nb::arg("lam"), nb::arg("options"));
}

}  // namespace hpcml_python
