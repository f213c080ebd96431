// The CPU kernels' instruction set: the best level of CpuLevels this CPU runs, capped by
// HPCML_CPU_KERNEL.
#include "cpu_kernel.hpp"

#include <hpcml/core.hpp>

#include <algorithm>
#include <cstdlib>

namespace hpcml {
namespace detail {

// How each level is detected. GCC asks for the levels by the names its target attributes
// compile (HPCML_COMPILED_FOR); Clang knows no level names, has no per-level instances, and its
// hand-written kernels use these features only.
bool Avx512Level::detected() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    return __builtin_cpu_supports("x86-64-v4");
#elif defined(__x86_64__) && defined(__clang__)
    return Avx2Level::detected() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
    return false;
#endif
}

bool Avx2Level::detected() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    return __builtin_cpu_supports("x86-64-v3");
#elif defined(__x86_64__) && defined(__clang__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

namespace {

// The table's ranks fall from first to last, as best_kernel and the cap assume.
constexpr bool ranks_fall() {
    const auto& levels = CpuLevels::names;
    for (std::size_t k = 1; k < levels.size(); ++k)
        if (!(levels[k].value < levels[k - 1].value)) return false;
    return true;
}
static_assert(ranks_fall(), "CpuLevels lists the levels best first");

CpuKernel detect() {  // best first: the first level this CPU runs
    CpuKernel best = BaselineLevel::value;
    bool found = false;
    CpuLevels::for_each([&](auto entry) {
        if (!found && decltype(entry)::detected()) {
            best = decltype(entry)::value;
            found = true;
        }
    });
    return best;
}

}  // namespace

CpuKernel cpu_kernel_supported() {
    static const CpuKernel best = detect();
    return best;
}

CpuKernel cpu_kernel_level() {
    const char* cap = std::getenv("HPCML_CPU_KERNEL");
    if (!cap || !*cap) return cpu_kernel_supported();
    return std::min(cpu_kernel_supported(), parse_in(CpuLevels::names, cap, "HPCML_CPU_KERNEL"));
}

std::string_view to_string(CpuKernel level) noexcept { return name_in(CpuLevels::names, level); }

double pair_samples_per_cycle(CpuKernel level) noexcept {
    double rate = BaselineLevel::pair_samples_per_cycle;
    CpuLevels::visit(level, [&](auto entry) { rate = decltype(entry)::pair_samples_per_cycle; });
    return rate;
}

}  // namespace detail

std::string_view cpu_kernel() { return detail::to_string(detail::cpu_kernel_level()); }

std::vector<std::string_view> cpu_kernel_names() { return detail::names_in(detail::CpuLevels::names); }

double cpu_kernel_pair_samples_per_cycle() { return detail::pair_samples_per_cycle(detail::cpu_kernel_level()); }

}  // namespace hpcml
