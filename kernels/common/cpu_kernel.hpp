// The instruction sets the CPU kernels are compiled for, as one ordered table of levels (as
// Highway's target list): the best this CPU runs is used, capped by the environment variable
// HPCML_CPU_KERNEL (a level's name), which is read on each call so that a comparison or a test
// can run every level the machine has in one process.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "names.hpp"

namespace hpcml::detail {

// A level, by its rank: a level runs on every CPU that runs one of higher rank. The levels are
// the entries below, not names of this type.
enum class CpuKernel : unsigned {};

// GCC on x86-64 compiles a body once per level (target attributes; flatten inlines everything
// the body calls, so its loops are vectorised for the level and vector math calls the level's
// libmvec variant). Elsewhere (Clang, other CPUs) there is one build, the baseline's.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define HPCML_COMPILED_FOR(arch) [[gnu::target(arch), gnu::flatten]]
#define HPCML_COMPILED_FOR_BASELINE [[gnu::flatten]]
#else
#define HPCML_COMPILED_FOR(arch)
#define HPCML_COMPILED_FOR_BASELINE
#endif

// The levels, one entry each, written best first as in CpuLevels (tests/CMakeLists.txt reads
// their names in this order); adding a level is one entry here, its place in CpuLevels, and the
// kernels written for it (best_kernel picks them). An entry gives
//   value, name              its rank and its name (HPCML_CPU_KERNEL, hpcml::cpu_kernel());
//   detected()               whether this CPU runs it (cpu_kernel.cpp);
//   run(body)                body compiled for it;
//   pair_samples_per_cycle   the similarity kernel's best on one physical core: 4 vector
//                            instructions per vector of pairs (similarity/cpu.cpp) on 4 vector
//                            pipes, one pair-sample per float lane (the floor the benchmarks quote).
struct Avx512Level {  // x86-64-v4: AVX-512 F, BW, CD, DQ, VL
    static constexpr CpuKernel value{2};
    static constexpr std::string_view name = "avx512";
    static constexpr double pair_samples_per_cycle = 16;
    static bool detected();
    template <class Body>
    HPCML_COMPILED_FOR("arch=x86-64-v4")
    static void run(const Body& body) {
        body();
    }
};
struct Avx2Level {  // x86-64-v3: AVX2, FMA, BMI2
    static constexpr CpuKernel value{1};
    static constexpr std::string_view name = "avx2";
    static constexpr double pair_samples_per_cycle = 8;
    static bool detected();
    template <class Body>
    HPCML_COMPILED_FOR("arch=x86-64-v3")
    static void run(const Body& body) {
        body();
    }
};
struct BaselineLevel {  // x86-64's SSE2, or another CPU
    static constexpr CpuKernel value{0};
    static constexpr std::string_view name = "baseline";
    static constexpr double pair_samples_per_cycle = 4;
    static bool detected() { return true; }
    template <class Body>
    HPCML_COMPILED_FOR_BASELINE static void run(const Body& body) {
        body();
    }
};

// Best first (HPCML_CPU_KERNEL's error lists them so).
using CpuLevels = VariantTable<Avx512Level, Avx2Level, BaselineLevel>;

CpuKernel cpu_kernel_level();      // InvalidArgument naming HPCML_CPU_KERNEL where its value is not a level
CpuKernel cpu_kernel_supported();  // the best level this CPU runs, whatever the cap
std::string_view to_string(CpuKernel level) noexcept;
double pair_samples_per_cycle(CpuKernel level) noexcept;

// body() compiled for `level`.
template <class Body>
void run_compiled_for(CpuKernel level, const Body& body) {
    CpuLevels::visit(level, [&](auto entry) { decltype(entry)::run(body); });
}

// A kernel written for one level, which runs at that level and every higher one.
template <class Kernel>
struct LevelKernel {
    CpuKernel level;
    Kernel kernel;  // null where this build has no such kernel (another compiler or CPU)
};

// The kernel of the best level at or below `level`: `kernels` lists a file's kernels best
// first and ends with the baseline's.
template <class Kernel, std::size_t N>
Kernel best_kernel(CpuKernel level, const std::array<LevelKernel<Kernel>, N>& kernels) {
    static_assert(N > 0);
    for (const LevelKernel<Kernel>& k : kernels)
        if (k.kernel && k.level <= level) return k.kernel;
    return kernels[N - 1].kernel;
}

}  // namespace hpcml::detail
