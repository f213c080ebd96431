// Device query through the CUDA runtime (the CUDA backend's half of device.hpp). Attributes the
// CUDA 13 runtime removed from cudaDeviceProp (clock rates among them) are read with
// cudaDeviceGetAttribute.
#include <cuda_runtime.h>

#include <hpcml/device.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "architectures.hpp"

namespace hpcml {

std::string cuda_architectures() { return detail::describe_architectures(HPCML_CUDA_ARCHITECTURES); }

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
    info.peak_memory_bandwidth_gbps = 2.0 * info.memory_clock_khz * (info.memory_bus_width_bits / 8.0) / 1e6;
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
            runtime + ", which needs an NVIDIA driver supporting CUDA " + runtime +
            " or newer (driver >= 580 for CUDA 13) and a GPU this build has kernels for (" + cuda_architectures() +
            "). The CPU backend works without one.";
    } else if (status == cudaErrorInsufficientDriver ||
               (query.driver_version > 0 && query.driver_version < query.runtime_version && status != cudaSuccess)) {
        query.status = CudaStatus::DriverTooOld;
        query.message = "the NVIDIA driver supports CUDA " + driver + ", older than the CUDA runtime " + runtime +
                        " hpcml was built with. Update the driver (>= 580 for CUDA 13) or rebuild "
                        "hpcml with an older toolkit. The CPU backend works meanwhile.";
    } else if (status == cudaErrorNoDevice || (status == cudaSuccess && count == 0)) {
        query.status = CudaStatus::NoDevice;
        query.message = "an NVIDIA driver (CUDA " + driver +
                        ") is loaded, but no CUDA device is visible. Check that the GPU is "
                        "present (nvidia-smi) and that CUDA_VISIBLE_DEVICES does not hide it.";
    } else if (status != cudaSuccess) {
        query.status = CudaStatus::Error;
        query.message = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(status) + " (" +
                        cudaGetErrorString(status) + "); driver CUDA " + driver + ", runtime " + runtime + ".";
    } else {
        std::string reasons;
        for (int device = 0; device < count; ++device) {
            DeviceInfo info = describe(device);
            info.unusable_reason = detail::architecture_problem(HPCML_CUDA_ARCHITECTURES, info.compute_capability_major,
                                                                info.compute_capability_minor);
            info.usable = info.unusable_reason.empty();
            if (!info.usable)
                reasons += (reasons.empty() ? "" : "; ") + std::string("device ") + std::to_string(device) + " (" +
                           info.name + ", compute capability " + std::to_string(info.compute_capability_major) + "." +
                           std::to_string(info.compute_capability_minor) + "): " + info.unusable_reason;
            query.devices.push_back(std::move(info));
        }
        const bool any =
            std::any_of(query.devices.begin(), query.devices.end(), [](const DeviceInfo& d) { return d.usable; });
        query.status = any ? CudaStatus::Ok : CudaStatus::NoKernelImage;
        if (!any) query.message = "no visible CUDA device can run this build of hpcml: " + reasons + ".";
    }
    return query;
}

}  // namespace hpcml
