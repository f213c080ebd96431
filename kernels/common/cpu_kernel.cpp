// The CPU kernels' instruction set: this CPU's best, capped by HPCML_CPU_KERNEL.
#include "cpu_kernel.hpp"

#include <hpcml/core.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "names.hpp"

namespace hpcml {
namespace detail {

namespace {

constexpr std::array<Named<CpuKernel>, 3> kCpuKernels{
    {{CpuKernel::avx512, "avx512"}, {CpuKernel::avx2, "avx2"}, {CpuKernel::baseline, "baseline"}}};

CpuKernel supported() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    // The levels as GCC compiles them (run_compiled_for's target attributes).
    if (__builtin_cpu_supports("x86-64-v4")) return CpuKernel::avx512;
    if (__builtin_cpu_supports("x86-64-v3")) return CpuKernel::avx2;
#elif defined(__x86_64__) && defined(__clang__)
    // Clang knows no level names; its build has no run_compiled_for instances, and its kernels
    // use these features only.
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512f")) return CpuKernel::avx512;
    if (avx2) return CpuKernel::avx2;
#endif
    return CpuKernel::baseline;
}

}  // namespace

CpuKernel cpu_kernel_supported() {
    static const CpuKernel best = supported();
    return best;
}

CpuKernel cpu_kernel_level() {
    const char* cap = std::getenv("HPCML_CPU_KERNEL");
    if (!cap || !*cap) return cpu_kernel_supported();
    return std::min(cpu_kernel_supported(), parse_in(kCpuKernels, cap, "HPCML_CPU_KERNEL"));
}

std::string_view to_string(CpuKernel level) noexcept { return name_in(kCpuKernels, level); }

}  // namespace detail

std::string_view cpu_kernel() { return detail::to_string(detail::cpu_kernel_level()); }

}  // namespace hpcml
