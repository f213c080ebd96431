// Which GPUs this build of hpcml has kernels for, from CMAKE_CUDA_ARCHITECTURES (passed to
// device.cpp with commas for semicolons: "75-real,80-real,86-real,89-real,90"). Decided from
// the list and a device's compute capability alone: creating a context to try the kernel image
// would hold hundreds of MiB on every GPU of every process that asks (an MPI rank, the tracer).
// The kernel_images test checks with cuobjdump that the library holds what the list promises.
#pragma once

#include <string>

namespace hpcml::detail {

// In words: "sm_75, sm_80 machine code and compute_90 PTX, which the driver compiles for newer GPUs".
std::string describe_architectures(const std::string& list);

// "" when `list` has code for compute capability major.minor, else why not, in words a person can
// act on. Machine code for sm_XY runs on X.Z for Z >= Y (sm_XYa only on X.Y); PTX for compute_XY
// is compiled by the driver for any capability >= X.Y.
std::string architecture_problem(const std::string& list, int major, int minor);

}  // namespace hpcml::detail
