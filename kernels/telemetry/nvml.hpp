// NVML loaded at run time: the functions hpcml uses, resolved with dlsym from libnvidia-ml.so.1
// (or $HPCML_NVML_LIBRARY). Compiled against the real nvml.h (PyPI's nvidia-nvml-dev provides
// it where the CUDA toolkit does not).
#pragma once

#include <nvml.h>

#include <string>

namespace hpcml::detail::telemetry {

struct Nvml {
    decltype(&nvmlInit_v2) init = nullptr;
    decltype(&nvmlShutdown) shutdown = nullptr;
    decltype(&nvmlErrorString) error_string = nullptr;
    decltype(&nvmlDeviceGetCount_v2) device_count = nullptr;
    decltype(&nvmlDeviceGetHandleByIndex_v2) handle_by_index = nullptr;
    decltype(&nvmlDeviceGetHandleByPciBusId_v2) handle_by_pci_bus_id = nullptr;
    decltype(&nvmlDeviceGetName) name = nullptr;
    // Spelled out: nvml.h 13 marks nvmlDeviceGetTemperature deprecated, but drivers >= 580 have it.
    nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*) = nullptr;
    decltype(&nvmlDeviceGetPowerUsage) power_usage = nullptr;
    decltype(&nvmlDeviceGetEnforcedPowerLimit) power_limit = nullptr;
    decltype(&nvmlDeviceGetUtilizationRates) utilization = nullptr;
    decltype(&nvmlDeviceGetMemoryInfo) memory_info = nullptr;
    decltype(&nvmlDeviceGetTotalEnergyConsumption) total_energy = nullptr;
    decltype(&nvmlDeviceGetFieldValues) field_values = nullptr;  // null where the driver lacks it

    std::string error(nvmlReturn_t status) const;
};

// The loaded and initialised NVML, or nullptr with `why` set. Loaded once per process.
const Nvml* load_nvml(std::string& why);

}  // namespace hpcml::detail::telemetry
