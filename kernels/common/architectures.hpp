// Which GPUs this build of hpcml has kernels for, from CMAKE_CUDA_ARCHITECTURES (passed to
// device.cpp with commas for semicolons: "75-real,80-real,86-real,89-real,90"). Decided from
// the list and a device's compute capability alone: creating a context to try the kernel image
// would hold hundreds of MiB on every GPU of every process that asks (an MPI rank, the tracer).
// The kernel_images test checks with cuobjdump that the library holds what the list promises.
#pragma once

#include <cstddef>
#include <string>

namespace hpcml::detail {

// The most shared memory one block may have on compute capability sm / 10 . sm % 10 (the opt-in
// limit, cudaDevAttrMaxSharedMemoryPerBlockOptin; the CUDA C++ Programming Guide's technical
// specifications per compute capability), or 0 for one not listed here. Static shared memory is
// capped at 48 KiB on all of them, so only a kernel's dynamic shared memory past that depends on it.
struct SharedMemoryLimit {
    int sm;
    std::size_t bytes;
};
inline constexpr SharedMemoryLimit kSharedMemoryPerBlock[] = {
    {75, 64 * 1024},                                         // Turing
    {80, 163 * 1024},  {86, 99 * 1024},   {87, 163 * 1024},  // Ampere: A100, GA10x, Orin
    {89, 99 * 1024},                                         // Ada
    {90, 227 * 1024},                                        // Hopper
    {100, 227 * 1024}, {103, 227 * 1024}, {120, 99 * 1024},  // Blackwell: B200, B300, GeForce
};
constexpr std::size_t max_shared_memory_per_block(int sm) {
    for (const SharedMemoryLimit& limit : kSharedMemoryPerBlock)
        if (limit.sm == sm) return limit.bytes;
    return 0;
}

// In words: "sm_75, sm_80 machine code and compute_90 PTX, which the driver compiles for newer GPUs".
std::string describe_architectures(const std::string& list);

// "" when `list` has code for compute capability major.minor, else why not, in words a person can
// act on. Machine code for sm_XY runs on X.Z for Z >= Y (sm_XYa only on X.Y); PTX for compute_XY
// is compiled by the driver for any capability >= X.Y.
std::string architecture_problem(const std::string& list, int major, int minor);

}  // namespace hpcml::detail
