// Whether this build of hpcml has kernels for a device (kernel_image.cu; used by device.cpp).
#pragma once

#include <string>

namespace hpcml::detail {

// "" when hpcml's kernels load on `device`, else why not, in words a person can act on.
std::string kernel_image_problem(int device);

// CMAKE_CUDA_ARCHITECTURES with commas for semicolons ("75-real,80-real,90"), in words:
// "sm_75, sm_80, sm_90 machine code and compute_90 PTX, which ...".
std::string describe_architectures(const std::string& list);

}  // namespace hpcml::detail
