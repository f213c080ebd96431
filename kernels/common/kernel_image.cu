// Whether hpcml's kernels can run on a device. Every kernel of the library is compiled for the
// same architectures (CMAKE_CUDA_ARCHITECTURES), so whether this empty kernel's image loads on
// a device answers for all of them: a GPU with neither matching machine code nor PTX it can
// compile (an sm_90-only build on an A100) fails here, once, with a reason, instead of at
// every launch with cudaErrorNoKernelImageForDevice.
#include <hpcml/device.hpp>

#include <cuda_runtime.h>

#include <string>

#include "kernel_image.hpp"

namespace hpcml::detail {

namespace {
__global__ void kernel_image_probe_kernel() {}
}  // namespace

std::string kernel_image_problem(int device) {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) previous = device;
    cudaError_t status = cudaSetDevice(device);
    cudaFuncAttributes attributes{};
    if (status == cudaSuccess) status = cudaFuncGetAttributes(&attributes, kernel_image_probe_kernel);
    (void)cudaSetDevice(previous);
    (void)cudaGetLastError();  // the probe's error is reported here, not left sticky
    if (status == cudaSuccess) return "";
    if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) {
        return "this build of hpcml has no kernel image for its architecture (built for " +
               cuda_architectures() + "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=<its compute capability, e.g. 80>";
    }
    return std::string("loading hpcml's kernels failed: ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace hpcml::detail
