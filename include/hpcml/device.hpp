/// @file
/// hpcml device query: what CUDA devices this machine has, and why none is usable if so.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hpcml {

/// One CUDA device as the CUDA runtime describes it; a property the runtime does not give is 0 or empty.
struct DeviceInfo {
    int index = 0;                     ///< CUDA ordinal (respects CUDA_VISIBLE_DEVICES)
    std::string name;                  ///< the device's name (cudaDeviceProp::name)
    std::string pci_bus_id;            ///< "0000:3B:00.0": how NVML and nvidia-smi name it
    bool integrated = false;           ///< an integrated GPU, sharing the host's memory (cudaDevAttrIntegrated)
    int compute_capability_major = 0;  ///< 9 for compute capability 9.0
    int compute_capability_minor = 0;  ///< 0 for compute capability 9.0
    int multiprocessor_count = 0;      ///< streaming multiprocessors (SMs)
    std::size_t total_global_memory_bytes = 0;               ///< global memory in bytes
    int l2_cache_bytes = 0;                                  ///< L2 cache in bytes
    std::size_t shared_memory_per_block_bytes = 0;           ///< default limit
    std::size_t shared_memory_per_block_optin_bytes = 0;     ///< with cudaFuncAttributeMaxDynamicSharedMemorySize
    std::size_t shared_memory_per_multiprocessor_bytes = 0;  ///< shared memory of one SM, in bytes
    int sm_clock_khz = 0;                                    ///< peak SM clock in kHz (cudaDevAttrClockRate)
    int memory_clock_khz = 0;                                ///< peak memory clock in kHz (cudaDevAttrMemoryClockRate)
    int memory_bus_width_bits = 0;                           ///< global memory bus width in bits
    double peak_memory_bandwidth_gbps = 0.0;                 ///< 2 * memory clock * bus width / 8, in GB/s (1e9)
    /// Whether hpcml's kernels load here: this build has machine code for the device's
    /// architecture or PTX the driver can compile for it. If not, why (unusable_reason).
    bool usable = false;
    std::string unusable_reason;  ///< why not usable, and what to rebuild with; empty when usable
};

/// Why the CUDA backend is or is not usable.
enum class CudaStatus {
    Ok,             ///< at least one usable device
    NotCompiled,    ///< this build of hpcml has no CUDA backend
    NoDriver,       ///< no NVIDIA driver is loaded (a CPU-only machine)
    DriverTooOld,   ///< the driver is older than the CUDA runtime hpcml was built with
    NoDevice,       ///< a driver, but no device visible (check CUDA_VISIBLE_DEVICES)
    NoKernelImage,  ///< devices, but none this build of hpcml has kernels for (rebuild for them)
    Error           ///< any other CUDA error; see message
};

/// What query_devices() found: whether the CUDA backend is usable, the CUDA versions and the visible devices.
struct DeviceQuery {
    CudaStatus status = CudaStatus::NotCompiled;  ///< Ok, or why the CUDA backend is not usable
    std::string message;                          ///< one paragraph a person can act on; empty when status is Ok
    int driver_version = 0;                       ///< as cudaDriverGetVersion: 1000*major + 10*minor; 0 = no driver
    int runtime_version = 0;                      ///< the CUDA runtime linked into hpcml; 0 when not compiled
    std::vector<DeviceInfo> devices;              ///< every visible device, usable or not
};

/// Queries the CUDA runtime. Never throws for "no GPU": that is a status, not an error.
DeviceQuery query_devices();

/// The usable devices (empty on a machine without one).
std::vector<DeviceInfo> devices();

/// The GPU architectures this build's kernels were compiled for, in words ("" without CUDA).
std::string cuda_architectures();

/// Hands back what hpcml keeps between calls: its host scratch blocks (up to 64 MiB), its pinned
/// staging blocks (up to 512 MiB) and the unused memory of its device pools (up to 1 GiB each).
/// Calls after it allocate afresh. Runs by itself at exit.
void release_cached_memory() noexcept;

/// The status's name: "ok", "not_compiled", "no_driver", "driver_too_old", "no_device", "no_kernel_image", "error".
std::string_view to_string(CudaStatus status) noexcept;

/// "13.0" from 13000.
std::string format_cuda_version(int version);

}  // namespace hpcml
