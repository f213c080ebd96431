// hpcml._hpcml: the nanobind module behind the `hpcml` package.
// hpcml::Error maps to ValueError (InvalidArgument), MemoryError (OutOfMemory) and
// RuntimeError (NoDevice, DriverTooOld, Cuda, Internal).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <Python.h>

#include "bindings.hpp"

namespace hpcml_python {

nb::dict stats_dict(const hpcml::RunStats& stats) {
    nb::dict out;
    out["backend"] = std::string(hpcml::to_string(stats.backend));
    out["method"] = std::string(hpcml::to_string(stats.method));
    out["seconds"] = stats.seconds;
    out["peak_device_bytes"] = stats.memory.peak_device_bytes;
    out["peak_host_bytes"] = stats.memory.peak_host_bytes;
    return out;
}

void Options::execution(hpcml::ExecutionOptions& o) {
    if (kwargs_.contains("backend")) o.backend = hpcml::parse_backend(take<std::string>("backend"), "backend");
    if (kwargs_.contains("method")) o.method = hpcml::parse_method(take<std::string>("method"), "method");
    o.device = take_or<int>("device", o.device);
    o.stream = reinterpret_cast<void*>(take_or<std::uintptr_t>("stream", 0));
    o.progress_interval = take_or<double>("progress_interval", o.progress_interval);
    // A Python callable as ExecutionOptions::progress, called with the interpreter's lock taken,
    // since the calls run with it released; held by handle, since options are copied where the
    // lock is not held.
    if (kwargs_.contains("progress") && !kwargs_["progress"].is_none()) {
        const nb::handle callback = kwargs_["progress"];
        seen("progress");
        o.progress = [callback](std::uint64_t done, std::uint64_t total) {
            nb::gil_scoped_acquire gil;
            callback(done, total);
        };
    } else if (kwargs_.contains("progress")) {
        seen("progress");
    }
}

void Options::missing(const char* name) const {
    std::string untaken;
    for (const auto& [key, value] : kwargs_) {
        const std::string given = nb::cast<std::string>(key);
        if (std::find(taken_.begin(), taken_.end(), given) == taken_.end())
            untaken += (untaken.empty() ? "" : ", ") + given;
    }
    throw hpcml::Error(
        hpcml::ErrorKind::InvalidArgument,
        std::string(name) + ": a required option is missing (the binding's caller misnamed it; " +
            (untaken.empty() ? "every name given is read)" : "given and not yet read: " + untaken + ")"));
}

void Options::done() const {
    for (const auto& [key, value] : kwargs_) {
        const std::string name = nb::cast<std::string>(key);
        if (std::find(taken_.begin(), taken_.end(), name) == taken_.end())
            throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                               name + ": not an option of this call (the binding's caller misnamed it)");
    }
}

}  // namespace hpcml_python

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

// The machine's side: devices, backends, the CPU kernels, CUDA's status, the caches.
void bind_devices_and_backends(nb::module_& m) {
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
        "cpu_kernel", [] { return std::string(hpcml::cpu_kernel()); },
        "The instruction set the CPU backend's kernels use here: 'avx512', 'avx2' or 'baseline' "
        "(HPCML_CPU_KERNEL=avx2 or =baseline in the environment caps it).");
    m.def(
        "cpu_kernel_names",
        [] {
            std::vector<std::string> names;
            for (std::string_view name : hpcml::cpu_kernel_names()) names.emplace_back(name);
            return names;
        },
        "Every CPU level's name, best first (the values HPCML_CPU_KERNEL takes).");
    m.def("cpu_kernel_pair_samples_per_cycle", &hpcml::cpu_kernel_pair_samples_per_cycle,
          "The similarity kernel's best at that level: pair-samples per cycle and physical core (the "
          "floor the benchmarks quote).");

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
          "Hands back the host scratch blocks, pinned staging blocks and unused device-pool memory hpcml keeps "
          "between calls.");

    m.def(
        "resolve_backend",
        [](const std::string& backend, int device) {
            return std::string(hpcml::to_string(hpcml::make_context(hpcml::parse_backend(backend), device).backend));
        },
        nb::arg("backend") = "auto", nb::arg("device") = 0,
        "The backend 'auto', 'cpu' or 'cuda' resolves to here; raises RuntimeError for 'cuda' "
        "without a usable device.");
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

    bind_devices_and_backends(m);
    hpcml_python::bind_similarity(m);
    hpcml_python::bind_regret(m);
    hpcml_python::bind_invgauss(m);
    hpcml_python::bind_telemetry(m);
}
