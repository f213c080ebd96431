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
// limit, cudaDevAttrMaxSharedMemoryPerBlockOptin) and one SM holds in all, of which the runtime
// reserves kSharedReservedPerBlock per resident block (the CUDA C++ Programming Guide's technical
// specifications per compute capability); 0 for one not listed here. Static shared memory is
// capped at 48 KiB on all of them, so only a kernel's dynamic shared memory past that depends on it.
struct SharedMemoryLimit {
    int sm;
    std::size_t per_block, per_sm;
};
inline constexpr SharedMemoryLimit kSharedMemory[] = {
    {75, 64 * 1024, 64 * 1024},                                                                  // Turing
    {80, 163 * 1024, 164 * 1024},  {86, 99 * 1024, 100 * 1024},   {87, 163 * 1024, 164 * 1024},  // A100, GA10x, Orin
    {89, 99 * 1024, 100 * 1024},                                                                 // Ada
    {90, 227 * 1024, 228 * 1024},                                                                // Hopper
    {100, 227 * 1024, 228 * 1024}, {103, 227 * 1024, 228 * 1024}, {120, 99 * 1024, 100 * 1024},  // Blackwell
};
inline constexpr std::size_t kSharedReservedPerBlock = 1024;
constexpr SharedMemoryLimit shared_memory(int sm) {
    for (const SharedMemoryLimit& limit : kSharedMemory)
        if (limit.sm == sm) return limit;
    return {sm, 0, 0};
}
constexpr std::size_t max_shared_memory_per_block(int sm) { return shared_memory(sm).per_block; }
// How many blocks of `bytes` of shared memory each an SM of compute capability sm holds at once.
constexpr int blocks_per_sm_by_shared_memory(int sm, std::size_t bytes) {
    return static_cast<int>(shared_memory(sm).per_sm / (bytes + kSharedReservedPerBlock));
}

// In words: "sm_75, sm_80 machine code and compute_90 PTX, which the driver compiles for newer GPUs".
std::string describe_architectures(const std::string& list);

// "" when `list` has code for compute capability major.minor, else why not, in words a person can
// act on. Machine code for sm_XY runs on X.Z for Z >= Y (sm_XYa only on X.Y); PTX for compute_XY
// is compiled by the driver for any capability >= X.Y.
std::string architecture_problem(const std::string& list, int major, int minor);

}  // namespace hpcml::detail
