// The instruction set the CPU kernels use: the best this CPU runs, capped by the environment
// variable HPCML_CPU_KERNEL (avx512, avx2 or baseline), which is read on each call so that a
// comparison or a test can run every level the machine has in one process.
#pragma once

#include <string_view>

namespace hpcml::detail {

// Ordered: a level runs on every CPU that runs a higher one. avx2 is x86-64-v3 (AVX2, FMA,
// BMI2), avx512 x86-64-v4 (AVX-512 F, BW, CD, DQ, VL); baseline is x86-64's SSE2, or another CPU.
enum class CpuKernel { baseline, avx2, avx512 };

CpuKernel cpu_kernel_level();  // InvalidArgument naming HPCML_CPU_KERNEL where its value is not a level
CpuKernel cpu_kernel_supported();  // the best level this CPU runs, whatever the cap
std::string_view to_string(CpuKernel level) noexcept;

// body() compiled for `level`: each instance inlines body and everything it
// calls (flatten), so its loops are vectorised for that level, and vector math calls the
// matching libmvec variant. GCC on x86-64 only; elsewhere one baseline build.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
template <class Body>
[[gnu::target("arch=x86-64-v4"), gnu::flatten]] void run_avx512(const Body& body) {
    body();
}
template <class Body>
[[gnu::target("arch=x86-64-v3"), gnu::flatten]] void run_avx2(const Body& body) {
    body();
}
template <class Body>
[[gnu::flatten]] void run_baseline(const Body& body) {
    body();
}
template <class Body>
void run_compiled_for(CpuKernel level, const Body& body) {
    if (level >= CpuKernel::avx512) return run_avx512(body);
    if (level >= CpuKernel::avx2) return run_avx2(body);
    run_baseline(body);
}
#else
template <class Body>
void run_compiled_for(CpuKernel, const Body& body) {
    body();
}
#endif

}  // namespace hpcml::detail
