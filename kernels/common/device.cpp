// Device query through the CUDA runtime. Attributes the CUDA 13 runtime removed from
// cudaDeviceProp (clock rates among them) are read with cudaDeviceGetAttribute.
#include <hpcml/device.hpp>

#include <cstdio>

#if HPCML_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace hpcml {

std::string format_cuda_version(int version) {
    if (version <= 0) return "none";
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string_view to_string(CudaStatus status) noexcept {
    switch (status) {
        case CudaStatus::Ok: return "ok";
        case CudaStatus::NotCompiled: return "not_compiled";
        case CudaStatus::NoDriver: return "no_driver";
        case CudaStatus::DriverTooOld: return "driver_too_old";
        case CudaStatus::NoDevice: return "no_device";
        case CudaStatus::Error: return "error";
    }
    return "?";
}

#if HPCML_WITH_CUDA

namespace {

int attribute(cudaDeviceAttr attr, int device) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return value;
}

DeviceInfo describe(int device) {
    DeviceInfo info;
    info.index = device;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
        info.name = prop.name;
        info.total_global_memory_bytes = prop.totalGlobalMem;
    } else {
        (void)cudaGetLastError();
    }
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) == cudaSuccess) {
        info.pci_bus_id = bus_id;
    } else {
        (void)cudaGetLastError();
    }
    info.integrated = attribute(cudaDevAttrIntegrated, device) != 0;
    info.compute_capability_major = attribute(cudaDevAttrComputeCapabilityMajor, device);
    info.compute_capability_minor = attribute(cudaDevAttrComputeCapabilityMinor, device);
    info.multiprocessor_count = attribute(cudaDevAttrMultiProcessorCount, device);
    info.l2_cache_bytes = attribute(cudaDevAttrL2CacheSize, device);
    info.shared_memory_per_block_bytes =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlock, device));
    info.shared_memory_per_block_optin_bytes =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    info.shared_memory_per_multiprocessor_bytes =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    info.sm_clock_khz = attribute(cudaDevAttrClockRate, device);
    info.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
    info.memory_bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
    // Double data rate: two transfers per memory clock.
    info.peak_memory_bandwidth_gbps =
        2.0 * info.memory_clock_khz * (info.memory_bus_width_bits / 8.0) / 1e6;
    return info;
}

}  // namespace

DeviceQuery query_devices() {
    DeviceQuery query;
    (void)cudaRuntimeGetVersion(&query.runtime_version);
    if (cudaDriverGetVersion(&query.driver_version) != cudaSuccess) {
        (void)cudaGetLastError();
        query.driver_version = 0;
    }
    const std::string runtime = format_cuda_version(query.runtime_version);
    const std::string driver = format_cuda_version(query.driver_version);

    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    (void)cudaGetLastError();  // cudaGetDeviceCount's errors are sticky until read
    if (status == cudaErrorInsufficientDriver && query.driver_version == 0) {
        query.status = CudaStatus::NoDriver;
        query.message =
            "no NVIDIA driver is loaded on this machine (cudaGetDeviceCount: "
            "cudaErrorInsufficientDriver, driver version 0). hpcml was built with CUDA runtime " +
            runtime +
            ", which needs an NVIDIA driver supporting CUDA " + runtime +
            " or newer (driver >= 580 for CUDA 13) and a GPU of compute capability 7.5 or newer. "
            "The CPU backend works without one.";
    } else if (status == cudaErrorInsufficientDriver ||
               (query.driver_version > 0 && query.driver_version < query.runtime_version &&
                status != cudaSuccess)) {
        query.status = CudaStatus::DriverTooOld;
        query.message = "the NVIDIA driver supports CUDA " + driver +
                        ", older than the CUDA runtime " + runtime +
                        " hpcml was built with. Update the driver (>= 580 for CUDA 13) or rebuild "
                        "hpcml with an older toolkit. The CPU backend works meanwhile.";
    } else if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
        query.status = CudaStatus::NoDevice;
        query.message = "an NVIDIA driver (CUDA " + driver +
                        ") is loaded, but no CUDA device is visible. Check that the GPU is "
                        "present (nvidia-smi) and that CUDA_VISIBLE_DEVICES does not hide it.";
    } else if (status != cudaSuccess) {
        query.status = CudaStatus::Error;
        query.message = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) +
                        " (" + cudaGetErrorString(status) + "); driver CUDA " + driver +
                        ", runtime " + runtime + ".";
    } else {
        query.status = CudaStatus::Ok;
        for (int device = 0; device < count; ++device) query.devices.push_back(describe(device));
    }
    return query;
}

#else  // !HPCML_WITH_CUDA

DeviceQuery query_devices() {
    DeviceQuery query;
    query.status = CudaStatus::NotCompiled;
    query.message =
        "this build of hpcml has no CUDA backend: it was configured without a CUDA compiler. "
        "Install the CUDA toolkit (nvcc) and rebuild to use a GPU; the CPU backend works meanwhile.";
    return query;
}

#endif

std::vector<DeviceInfo> devices() { return query_devices().devices; }

}  // namespace hpcml
