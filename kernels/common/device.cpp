// Device query through the CUDA runtime. Attributes the CUDA 13 runtime removed from
// cudaDeviceProp (clock rates among them) are read with cudaDeviceGetAttribute.
#include <hpcml/device.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>
#include <vector>

#include "architectures.hpp"

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
        case CudaStatus::Ok:
            return "ok";
        case CudaStatus::NotCompiled:
            return "not_compiled";
        case CudaStatus::NoDriver:
            return "no_driver";
        case CudaStatus::DriverTooOld:
            return "driver_too_old";
        case CudaStatus::NoDevice:
            return "no_device";
        case CudaStatus::NoKernelImage:
            return "no_kernel_image";
        case CudaStatus::Error:
            return "error";
    }
    return "?";
}

namespace detail {

namespace {

// The entries of the list: number (as written, "90"), suffix letter ('a', 'f' or 0), and kind.
struct Architecture {
    int number = 0;
    char suffix = 0;
    bool machine_code = false, ptx = false;
};

// Parses "75-real,80-real,90,90a-virtual"; returns false for CMake's own words ("all", "native").
bool parse_architectures(const std::string& list, std::vector<Architecture>& out) {
    std::size_t begin = 0;
    while (begin <= list.size()) {
        const std::size_t end = std::min(list.find(',', begin), list.size());
        const std::string item = list.substr(begin, end - begin);
        begin = end + 1;
        if (item.empty()) continue;
        const std::size_t digits = item.find_first_not_of("0123456789");
        if (digits == 0) return false;
        Architecture a;
        a.number = std::stoi(item.substr(0, digits));
        std::string rest = digits == std::string::npos ? "" : item.substr(digits);
        if (!rest.empty() && std::isalpha(static_cast<unsigned char>(rest[0]))) {
            a.suffix = rest[0];
            rest = rest.substr(1);
        }
        if (rest != "" && rest != "-real" && rest != "-virtual") return false;
        a.machine_code = rest != "-virtual";
        a.ptx = rest != "-real";
        out.push_back(a);
    }
    return true;
}

std::string spelled(const char* prefix, const Architecture& a) {
    return prefix + std::to_string(a.number) + (a.suffix ? std::string(1, a.suffix) : "");
}

}  // namespace

std::string describe_architectures(const std::string& list) {
    std::vector<Architecture> parsed;
    if (!parse_architectures(list, parsed)) return list;  // "all", "all-major": CMake's own words
    std::string machine, ptx;
    for (const Architecture& a : parsed) {
        if (a.machine_code) machine += (machine.empty() ? "" : ", ") + spelled("sm_", a);
        if (a.ptx) ptx += (ptx.empty() ? "" : ", ") + spelled("compute_", a);
    }
    std::string out = machine.empty() ? "" : machine + " machine code";
    if (!ptx.empty()) out += (out.empty() ? "" : " and ") + ptx + " PTX, which the driver compiles for newer GPUs";
    return out;
}

std::string architecture_problem(const std::string& list, int major, int minor) {
    std::vector<Architecture> parsed;
    if (!parse_architectures(list, parsed)) return "";  // CMake chose; trust it
    const int capability = 10 * major + minor;
    for (const Architecture& a : parsed) {
        const bool exact = a.number == capability;
        if (a.machine_code && (exact || (!a.suffix && a.number / 10 == major && a.number % 10 <= minor))) return "";
        if (a.ptx && (exact || (!a.suffix && a.number <= capability))) return "";
    }
    return "this build of hpcml has no code for compute capability " + std::to_string(major) + "." +
           std::to_string(minor) + " (it holds " + describe_architectures(list) +
           "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(capability) + " or add it to the list";
}

}  // namespace detail

#if HPCML_WITH_CUDA

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

#else  // !HPCML_WITH_CUDA

std::string cuda_architectures() { return ""; }
void release_cached_memory() noexcept {}

DeviceQuery query_devices() {
    DeviceQuery query;
    query.status = CudaStatus::NotCompiled;
    query.message =
        "this build of hpcml has no CUDA backend: it was configured without a CUDA compiler. "
        "Install the CUDA toolkit (nvcc) and rebuild to use a GPU; the CPU backend works meanwhile.";
    return query;
}

#endif

std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> usable;
    for (DeviceInfo& d : query_devices().devices)
        if (d.usable) usable.push_back(std::move(d));
    return usable;
}

}  // namespace hpcml
