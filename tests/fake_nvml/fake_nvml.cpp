// A stand-in for libnvidia-ml.so.1 exporting the functions hpcml and the seed's pyNVML trace
// (examples/trace) load, so the sampler, hpcml-trace and the example are tested end to end on
// machines without a GPU. One device, "Fake GPU":
// 55 C, 200 W of a 400 W limit (205 W instantaneous), 75 % GPU and 40 % memory utilisation, 1 GiB of 4 GiB used,
// and an energy counter that grows at 200 W from load (unsupported when FAKE_NVML_NO_ENERGY=1).
#include <nvml.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace {
const auto loaded = std::chrono::steady_clock::now();
int fake_device = 0;
nvmlDevice_t handle() { return reinterpret_cast<nvmlDevice_t>(&fake_device); }
bool is_fake(nvmlDevice_t d) { return d == handle(); }
}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
nvmlReturn_t nvmlInitWithFlags(unsigned int) { return NVML_SUCCESS; }  // pynvml's nvmlInit
nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }
const char* nvmlErrorString(nvmlReturn_t result) { return result == NVML_SUCCESS ? "Success" : "Fake NVML error"; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
    *count = 1;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
    if (index != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *device = handle();
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char*, nvmlDevice_t* device) {
    *device = handle();
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
    if (!is_fake(device)) return NVML_ERROR_INVALID_ARGUMENT;
    std::strncpy(name, "Fake GPU", length);
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int* temp) {
    *temp = 55;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int* power) {
    *power = 200000;  // mW
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t, unsigned int* limit) {
    *limit = 400000;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t, unsigned int* limit) {  // the seed's trace reads it
    *limit = 400000;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t* utilization) {
    utilization->gpu = 75;
    utilization->memory = 40;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t* memory) {
    memory->total = 4ull << 30;
    memory->used = 1ull << 30;
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}
// The instantaneous power field: 205 W (the 1 s average says 200 W), unsupported when
// FAKE_NVML_NO_INSTANT=1, as on drivers without the field.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t, int count, nvmlFieldValue_t* values) {
    const char* off = std::getenv("FAKE_NVML_NO_INSTANT");
    for (int k = 0; k < count; ++k) {
        values[k].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        if (values[k].fieldId == NVML_FI_DEV_POWER_INSTANT && !(off && *off == '1')) {
            values[k].nvmlReturn = NVML_SUCCESS;
            values[k].valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            values[k].value.uiVal = 205000;  // mW
        }
    }
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t, unsigned long long* energy) {
    const char* off = std::getenv("FAKE_NVML_NO_ENERGY");
    if (off && *off == '1') return NVML_ERROR_NOT_SUPPORTED;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loaded).count();
    *energy = 5000000ull + static_cast<unsigned long long>(200.0 * ms);  // mJ: 200 W = 200 mJ per ms
    return NVML_SUCCESS;
}

}  // extern "C"
