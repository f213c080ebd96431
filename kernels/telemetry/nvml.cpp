#include "nvml.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "common/dynamic_library.hpp"

namespace hpcml::detail::telemetry {

std::string Nvml::error(nvmlReturn_t status) const {
    const char* text = error_string ? error_string(status) : nullptr;
    return std::string(text ? text : "unknown NVML error") + " (" + std::to_string(static_cast<int>(status)) + ")";
}

namespace {

template <class F>
bool bind(void* library, const char* symbol, F& function, std::string& why) {
    return detail::bind_symbol(library, symbol, function, why, "NVML library lacks ");
}

}  // namespace

const Nvml* load_nvml(std::string& why) {
    static Nvml nvml;
    static std::string failure;
    static bool loaded = false;
    static std::once_flag once;
    std::call_once(once, [] {
        const char* override_path = std::getenv("HPCML_NVML_LIBRARY");
        const std::string path = override_path && *override_path ? override_path : "libnvidia-ml.so.1";
        void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            const char* error = dlerror();
            failure = "NVML is not available: " + path + " could not be loaded (" + (error ? error : "?") +
                      "). It comes with the NVIDIA driver; a machine without one has no GPU telemetry.";
            return;
        }
        const bool ok = bind(library, "nvmlInit_v2", nvml.init, failure) &&
                        bind(library, "nvmlShutdown", nvml.shutdown, failure) &&
                        bind(library, "nvmlErrorString", nvml.error_string, failure) &&
                        bind(library, "nvmlDeviceGetCount_v2", nvml.device_count, failure) &&
                        bind(library, "nvmlDeviceGetHandleByIndex_v2", nvml.handle_by_index, failure) &&
                        bind(library, "nvmlDeviceGetHandleByPciBusId_v2", nvml.handle_by_pci_bus_id, failure) &&
                        bind(library, "nvmlDeviceGetName", nvml.name, failure) &&
                        bind(library, "nvmlDeviceGetTemperature", nvml.temperature, failure) &&
                        bind(library, "nvmlDeviceGetPowerUsage", nvml.power_usage, failure) &&
                        bind(library, "nvmlDeviceGetEnforcedPowerLimit", nvml.power_limit, failure) &&
                        bind(library, "nvmlDeviceGetUtilizationRates", nvml.utilization, failure) &&
                        bind(library, "nvmlDeviceGetMemoryInfo", nvml.memory_info, failure) &&
                        bind(library, "nvmlDeviceGetTotalEnergyConsumption", nvml.total_energy, failure);
        if (!ok) return;
        // Optional: the instantaneous power field (a driver without it gives the 1 s average).
        nvml.field_values = reinterpret_cast<decltype(nvml.field_values)>(dlsym(library, "nvmlDeviceGetFieldValues"));
        const nvmlReturn_t status = nvml.init();
        if (status != NVML_SUCCESS) {
            failure = "NVML is present but nvmlInit failed: " + nvml.error(status);
            return;
        }
        loaded = true;  // NVML stays initialised for the process (nvmlShutdown at exit is optional)
    });
    why = failure;
    return loaded ? &nvml : nullptr;
}

}  // namespace hpcml::detail::telemetry
