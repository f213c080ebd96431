// CUDA-side helpers of the common layer (built only with the CUDA backend).
#include <string>

#include "cuda_check.hpp"
#include "cuda_memory.hpp"

namespace hpcml::detail {

void raise_cuda(cudaError_t status, const char* call, const char* file, int line) {
    const ErrorKind kind = status == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Cuda;
    raise(kind, std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ") at " + file + ":" + std::to_string(line));
}

void ensure_device_fits(std::size_t bytes, const std::string& what) {
    std::size_t free_bytes = 0, total_bytes = 0;
    HPCML_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    // Leave room for the runtime, cuBLAS workspaces and the allocator's granularity.
    const std::size_t reserve = std::size_t{256} << 20;
    const std::size_t usable = free_bytes > reserve ? free_bytes - reserve : 0;
    if (bytes > usable) {
        raise(ErrorKind::OutOfMemory, what + " needs " + format_bytes(bytes) + " of device memory; " +
                                          format_bytes(free_bytes) + " are free");
    }
}

void require_device_pointer(const void* pointer, int device, const std::string& what) {
    if (!pointer) return;
    cudaPointerAttributes attributes{};
    const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
    if (status != cudaSuccess) {
        (void)cudaGetLastError();
        raise(ErrorKind::InvalidArgument, what + ": not a pointer CUDA knows (" + cudaGetErrorName(status) + ")");
    }
    switch (attributes.type) {
        case cudaMemoryTypeDevice:
            if (attributes.device != device)
                raise(ErrorKind::InvalidArgument, what + ": device memory of device " + std::to_string(attributes.device) +
                                                      ", but the call runs on device " + std::to_string(device));
            return;
        case cudaMemoryTypeManaged: return;
        case cudaMemoryTypeHost:
            if (attributes.devicePointer) return;  // mapped pinned memory
            [[fallthrough]];
        default:
            raise(ErrorKind::InvalidArgument, what + ": a host pointer where device memory is needed (use the host "
                                                     "entry point, or copy the data to the device first)");
    }
}

DeviceGuard::DeviceGuard(int device) {
    HPCML_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) HPCML_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { (void)cudaSetDevice(previous_); }

}  // namespace hpcml::detail
