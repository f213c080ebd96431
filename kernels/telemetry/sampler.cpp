// The telemetry sampler: one thread reading NVML every interval until stopped.
#include <hpcml/core.hpp>
#include <hpcml/device.hpp>
#include <hpcml/telemetry.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/error.hpp"
#if HPCML_WITH_NVML
#include "nvml.hpp"
#endif

namespace hpcml::telemetry {

Summary summarize(const std::vector<Sample>& samples, bool energy_counter) {
    Summary s;
    s.samples = samples.size();
    s.energy_from_counter = energy_counter;
    if (samples.empty()) return s;
    s.duration_s = samples.back().time_s - samples.front().time_s;
    double integral = 0.0;
    for (std::size_t k = 0; k < samples.size(); ++k) {
        const Sample& x = samples[k];
        s.peak_power_w = std::max(s.peak_power_w, x.power_w);
        s.mean_gpu_util_percent += x.gpu_util_percent / samples.size();
        s.mean_memory_util_percent += x.memory_util_percent / samples.size();
        if (k > 0) integral += 0.5 * (x.power_w + samples[k - 1].power_w) * (x.time_s - samples[k - 1].time_s);
    }
    s.energy_j = energy_counter ? samples.back().energy_j - samples.front().energy_j : integral;
    // Mean power over the window: energy / time (a sample mean would weight uneven intervals wrongly).
    s.mean_power_w = s.duration_s > 0 ? s.energy_j / s.duration_s : samples.front().power_w;
    return s;
}

#if HPCML_WITH_NVML

namespace {

using detail::telemetry::Nvml;

struct Located {
    const Nvml* nvml = nullptr;
    nvmlDevice_t handle{};
    Status status;
};

Located locate(int device) {
    Located out;
    std::string why;
    out.nvml = detail::telemetry::load_nvml(why);
    if (!out.nvml) {
        out.status = {Availability::NoLibrary, why, ""};
        return out;
    }
    const DeviceQuery cuda = query_devices();
    std::string how;
    nvmlReturn_t found = NVML_ERROR_NOT_FOUND;
    if (cuda.status == CudaStatus::Ok) {
        // NVML enumerates in PCI order and ignores CUDA_VISIBLE_DEVICES: match by bus id.
        for (const DeviceInfo& d : cuda.devices)
            if (d.index == device) {
                found = out.nvml->handle_by_pci_bus_id(d.pci_bus_id.c_str(), &out.handle);
                how = "CUDA device " + std::to_string(device) + " (PCI " + d.pci_bus_id + ")";
            }
        if (how.empty()) {
            out.status = {Availability::NoDevice,
                          "device: CUDA device " + std::to_string(device) + " does not exist (" +
                              std::to_string(cuda.devices.size()) + " visible)",
                          ""};
            return out;
        }
    } else {
        found = out.nvml->handle_by_index(static_cast<unsigned>(device), &out.handle);
        how = "NVML device " + std::to_string(device) +
              " (no CUDA device to match: " + std::string(to_string(cuda.status)) + ")";
    }
    if (found != NVML_SUCCESS) {
        out.status = {Availability::NoDevice, "NVML has no device for " + how + ": " + out.nvml->error(found), ""};
        return out;
    }
    char name[96] = {};
    if (out.nvml->name(out.handle, name, sizeof name) != NVML_SUCCESS) name[0] = '\0';
    out.status = {Availability::Ok, "tracing " + how, name};
    return out;
}

}  // namespace

Status status(int device) { return locate(device).status; }

struct Sampler::Impl {
    Located where;
    std::chrono::milliseconds interval;
    std::vector<Sample> samples;
    std::thread thread;
    std::mutex mutex;
    std::condition_variable wake;
    bool stopping = false;
    bool energy_counter = true;
    bool power_instant = true;  // until the driver refuses the field
    unsigned long long energy_start_mj = 0;
    std::chrono::steady_clock::time_point start;

    // NVML's instantaneous power in mW; false (and not asked again) where the driver lacks it.
    bool instant_power(unsigned& power_mw) {
        nvmlFieldValue_t field{};
        field.fieldId = NVML_FI_DEV_POWER_INSTANT;
        const Nvml& n = *where.nvml;
        if (!n.field_values || n.field_values(where.handle, 1, &field) != NVML_SUCCESS ||
            field.nvmlReturn != NVML_SUCCESS) {
            power_instant = false;
            return false;
        }
        switch (field.valueType) {
            case NVML_VALUE_TYPE_UNSIGNED_INT:
                power_mw = field.value.uiVal;
                break;
            case NVML_VALUE_TYPE_UNSIGNED_LONG:
                power_mw = static_cast<unsigned>(field.value.ulVal);
                break;
            case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
                power_mw = static_cast<unsigned>(field.value.ullVal);
                break;
            case NVML_VALUE_TYPE_DOUBLE:
                power_mw = static_cast<unsigned>(field.value.dVal);
                break;
            default:
                power_instant = false;
                return false;
        }
        return true;
    }

    Sample read() {
        const Nvml& n = *where.nvml;
        Sample s;
        s.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        s.unix_time_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        unsigned temperature = 0, power_mw = 0, limit_mw = 0;
        if (n.temperature(where.handle, NVML_TEMPERATURE_GPU, &temperature) == NVML_SUCCESS)
            s.temperature_c = temperature;
        if ((power_instant && instant_power(power_mw)) || n.power_usage(where.handle, &power_mw) == NVML_SUCCESS) {
            s.power_w = power_mw / 1000.0;
            if (n.power_limit(where.handle, &limit_mw) == NVML_SUCCESS && limit_mw > 0)
                s.power_percent = 100.0 * power_mw / limit_mw;
        }
        nvmlUtilization_t util{};
        if (n.utilization(where.handle, &util) == NVML_SUCCESS) {
            s.gpu_util_percent = util.gpu;
            s.memory_util_percent = util.memory;
        }
        nvmlMemory_t memory{};
        if (n.memory_info(where.handle, &memory) == NVML_SUCCESS && memory.total > 0) {
            s.memory_used_bytes = static_cast<double>(memory.used);
            s.memory_used_percent = 100.0 * static_cast<double>(memory.used) / static_cast<double>(memory.total);
        }
        unsigned long long energy_mj = 0;
        if (energy_counter && n.total_energy(where.handle, &energy_mj) == NVML_SUCCESS) {
            s.energy_j = (energy_mj - energy_start_mj) / 1000.0;
        } else if (!samples.empty()) {
            energy_counter = false;  // unsupported: integrate power instead (trapezoid)
            const Sample& last = samples.back();
            s.energy_j = last.energy_j + 0.5 * (s.power_w + last.power_w) * (s.time_s - last.time_s);
        }
        return s;
    }
};

Sampler::Sampler(int device, std::chrono::milliseconds interval) : impl_(std::make_unique<Impl>()) {
    detail::require(interval.count() > 0, "interval: must be > 0 ms, got " + std::to_string(interval.count()));
    impl_->where = locate(device);
    impl_->interval = interval;
    if (impl_->where.status.availability != Availability::Ok)
        detail::raise(ErrorKind::NoDevice, impl_->where.status.message);
}

Sampler::~Sampler() {
    if (impl_ && impl_->thread.joinable()) stop();
}

void Sampler::start() {
    Impl& m = *impl_;
    detail::require(!m.thread.joinable(), "sampler: already started");
    m.samples.clear();
    m.stopping = false;
    m.start = std::chrono::steady_clock::now();
    m.energy_counter = m.where.nvml->total_energy(m.where.handle, &m.energy_start_mj) == NVML_SUCCESS;
    m.power_instant = true;
    m.samples.push_back(m.read());
    m.thread = std::thread([&m] {
        std::unique_lock<std::mutex> lock(m.mutex);
        auto next = m.start + m.interval;
        while (!m.wake.wait_until(lock, next, [&m] { return m.stopping; })) {
            m.samples.push_back(m.read());
            next += m.interval;
            // Fallen behind (reads slower than the interval, a stalled machine): skip the missed
            // ticks rather than take them back to back.
            if (const auto now = std::chrono::steady_clock::now(); next < now) next = now + m.interval;
        }
    });
}

Summary Sampler::stop() {
    Impl& m = *impl_;
    if (m.thread.joinable()) {
        {
            std::lock_guard<std::mutex> lock(m.mutex);
            m.stopping = true;
        }
        m.wake.notify_all();
        m.thread.join();
        m.samples.push_back(m.read());
    }
    Summary summary = summarize(m.samples, m.energy_counter);
    summary.power_instant = m.power_instant;
    return summary;
}

const std::vector<Sample>& Sampler::samples() const {
    // The thread appends to the vector while it runs: a reference then would race with it.
    detail::require(!impl_->thread.joinable(), "sampler: samples() while sampling; call stop() first");
    return impl_->samples;
}
std::string Sampler::device_name() const { return impl_->where.status.device_name; }

#else  // !HPCML_WITH_NVML

namespace {
const char* kNotCompiled =
    "this build of hpcml has no GPU telemetry: nvml.h was not found at configure time "
    "(pip install nvidia-nvml-dev, then reconfigure)";
}

Status status(int) { return {Availability::NotCompiled, kNotCompiled, ""}; }

struct Sampler::Impl {
    std::vector<Sample> samples;
};

Sampler::Sampler(int, std::chrono::milliseconds) { detail::raise(ErrorKind::NoDevice, kNotCompiled); }
Sampler::~Sampler() = default;
void Sampler::start() {}
Summary Sampler::stop() { return {}; }
const std::vector<Sample>& Sampler::samples() const { return impl_->samples; }
std::string Sampler::device_name() const { return ""; }

#endif

}  // namespace hpcml::telemetry
