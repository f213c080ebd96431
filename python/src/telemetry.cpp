// hpcml._hpcml: GPU telemetry and CPU energy (hpcml/telemetry.py wraps them).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/chrono.h>

#include "bindings.hpp"

namespace hpcml_python {

namespace {

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
    d["power_instant"] = s.power_instant;
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

nb::dict cpu_status_dict(const hpcml::telemetry::CpuEnergyStatus& s) {
    nb::dict d;
    d["available"] = s.available;
    d["message"] = s.message;
    d["domains"] = s.domains;
    return d;
}

nb::dict intensity_dict(const hpcml::telemetry::CarbonIntensity& c) {
    nb::dict d;
    d["grams_per_kwh"] = c.grams_per_kwh;
    d["world_average"] = c.world_average;
    d["label"] = c.label;
    return d;
}

}  // namespace

void bind_telemetry(nb::module_& m) {
    m.def(
        "_carbon_intensity",
        [](std::optional<double> given) { return intensity_dict(hpcml::telemetry::carbon_intensity(given)); },
        nb::arg("given").none());
    m.def("_emissions_csv_header", [] { return std::string(hpcml::telemetry::emissions_csv_header()); });
    m.def(
        "_append_emissions_csv",
        [](const std::string& path, double duration_s, std::optional<double> cpu_energy_j,
           std::optional<double> gpu_energy_j, std::optional<double> given, const std::string& project_name,
           const std::string& gpu_model, int gpu_count) {
            const hpcml::telemetry::CarbonIntensity intensity = hpcml::telemetry::carbon_intensity(given);
            hpcml::telemetry::EmissionsRun run;
            run.project_name = project_name;
            run.duration_s = duration_s;
            run.cpu_energy_j = cpu_energy_j;
            run.gpu_energy_j = gpu_energy_j;
            run.gpu_model = gpu_model;
            run.gpu_count = gpu_count;
            hpcml::telemetry::append_emissions_csv(path, run, intensity);
            nb::dict out = intensity_dict(intensity);
            out["emissions_kg"] = hpcml::telemetry::emissions_kg(run, intensity);
            return out;
        },
        nb::arg("path"), nb::arg("duration_s"), nb::arg("cpu_energy_j").none(), nb::arg("gpu_energy_j").none(),
        nb::arg("carbon_intensity").none(), nb::arg("project_name"), nb::arg("gpu_model"), nb::arg("gpu_count"));
    m.def("_cpu_energy_status", [] { return cpu_status_dict(hpcml::telemetry::cpu_energy_status()); });
    nb::class_<hpcml::telemetry::CpuEnergyMeter>(m, "_CpuEnergyMeter")
        .def(nb::init<>())
        .def("status", [](const hpcml::telemetry::CpuEnergyMeter& c) { return cpu_status_dict(c.status()); })
        .def("read", [](hpcml::telemetry::CpuEnergyMeter& c) {
            const hpcml::telemetry::CpuEnergy e = c.read();
            nb::dict d;
            d["valid"] = e.valid;
            d["why"] = e.why;
            d["energy_j"] = e.energy_j;
            d["seconds"] = e.seconds;
            return d;
        });

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
}

}  // namespace hpcml_python
