/// @file
/// hpcml core: backends, methods, the execution context, errors and memory statistics.
/// Plain C++20: no CUDA type appears here, so this header compiles with g++ alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

/// hpcml's whole API: the kernel families (similarity, regret matching, `invgauss`), the backends and
/// methods they run on, devices, errors and `telemetry`.
namespace hpcml {

/// Where a computation runs. Auto picks Cuda when a usable device exists, else Cpu.
enum class Backend { Auto, Cpu, Cuda };

/// Auto: the fastest exact method the call has (similarity: fused or sorted, by a cost model of
/// the shape and mode, docs/similarity.md; the other families: fused); RunStats says which ran.
/// Fused: the hand-written kernel that evaluates every element and never stores the broadcast
/// intermediate. Sorted (similarity only): sorts each sample's values and counts rank intervals
/// as bit masks, the same answer bit for bit with far less work on large inputs.
/// Naive: the eager "broadcast" baseline that does store it (what PyTorch/NumPy do), for comparison.
enum class Method { Auto, Fused, Sorted, Naive };

/// What went wrong, for a program to branch on: an argument out of its domain (the message names
/// it), memory that would not fit (the message gives the bytes needed and free), no usable CUDA
/// device, a driver older than this build's CUDA runtime, a failed CUDA call (named in the
/// message), or a bug in hpcml.
enum class ErrorKind { InvalidArgument, OutOfMemory, NoDevice, DriverTooOld, Cuda, Internal };

/// Every failure hpcml reports is an Error: a kind a program can branch on and a message a
/// person can act on (it names the argument, the CUDA call, or the bytes needed and free).
class Error : public std::runtime_error {
public:
    /// An error of `kind`; what() returns `message`.
    Error(ErrorKind kind, const std::string& message);
    /// What went wrong (ErrorKind).
    ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

/// Peak bytes a call allocated through hpcml's tracked allocator: device memory, and host
/// memory (pageable and pinned). Inputs and outputs owned by the caller are not counted;
/// copies of them that hpcml makes (to the device, say) are.
struct MemoryStats {
    std::size_t peak_device_bytes = 0;  ///< the most device memory hpcml held at once during the call
    std::size_t peak_host_bytes = 0;    ///< the most host memory (pageable and pinned) it held at once
};

/// What one call of a kernel family did: where it ran, how long it took (wall clock, seconds,
/// including transfers), and its peak memory.
struct RunStats {
    Backend backend = Backend::Cpu;  ///< where the call ran (never Auto)
    Method method = Method::Fused;   ///< the method that ran (never Auto)
    double seconds = 0.0;            ///< wall-clock seconds of the whole call, transfers included
    MemoryStats memory;              ///< the peak memory hpcml allocated for it
};

/// A resolved execution context: the backend actually used (never Auto), the CUDA device
/// ordinal (ignored on the CPU) and a CUDA stream (a cudaStream_t passed as void*, so that this
/// header needs no CUDA; nullptr is the default stream).
struct Context {
    Backend backend = Backend::Cpu;  ///< Cpu or Cuda
    int device = 0;                  ///< CUDA device ordinal (ignored on the CPU)
    void* stream = nullptr;          ///< the cudaStream_t work is queued on; nullptr is the default stream
};

/// A long call's progress: work done so far and the total, in the call's own units (output
/// elements for similarity and similarity_pairs, game-iterations for the game solvers).
using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t total)>;

/// Where and how a call runs. Every family's options extend it (SimilarityOptions,
/// RegretOptions, InvGaussOptions, DistanceOptions), so `options.backend = Backend::Cpu` reads the
/// same everywhere, and the one dispatch every entry point ends in takes it whole. An entry point
/// refuses, with InvalidArgument naming the field, what it cannot honour rather than ignore it:
/// a stream where it does not queue its work on the caller's stream (the calls on host memory,
/// which synchronise, except the inverse Gaussian's), a naive method where it has none.
struct ExecutionOptions {
    Backend backend = Backend::Auto;  ///< Auto: Cuda where a usable device exists, else Cpu (make_context)
    Method method = Method::Auto;  ///< the fastest exact method; Naive: the broadcast baseline (Method)
    int device = 0;                ///< CUDA device ordinal (ignored on the CPU)
    void* stream = nullptr;        ///< cudaStream_t; nullptr is the default stream
    /// Called on the calling thread, first once the call has run progress_interval seconds, then
    /// at most once per interval, and a last time with done == total if it was called at all: a
    /// short call never calls it. Where it throws, the call finishes its work, calls it no more,
    /// and throws that exception. Similarity, similarity_pairs and the game solvers report (the
    /// GPU's game solvers only at the end); the other calls refuse a callback.
    ProgressCallback progress;
    double progress_interval = 0.25;  ///< seconds, finite and >= 0
};

/// Resolves `requested` to a concrete backend. Auto gives Cuda when a usable device exists and
/// Cpu otherwise, and says which once per process on stderr (set HPCML_QUIET=1 to silence it).
/// Cuda without a usable device throws NoDevice or DriverTooOld with the reason; a device
/// ordinal out of range throws InvalidArgument (Auto too, where the machine has CUDA devices:
/// it does not fall back to the CPU for an ordinal its GPUs lack).
Context make_context(Backend requested = Backend::Auto, int device = 0, void* stream = nullptr);

/// True when this build of hpcml contains the CUDA backend (it may still find no device).
bool cuda_compiled() noexcept;

/// The backends usable now on this machine, Cpu first.
std::vector<Backend> available_backends();

/// The instruction set the CPU backend's kernels use on this machine: "avx512" (x86-64-v4),
/// "avx2" (x86-64-v3: AVX2 with FMA) or "baseline" (x86-64's SSE2, or another CPU). The
/// environment variable HPCML_CPU_KERNEL=avx2 or =baseline caps it, for comparisons (another
/// value makes this and every CPU call raise InvalidArgument naming the variable).
std::string_view cpu_kernel();
/// Every level's name, best first (the values HPCML_CPU_KERNEL takes).
std::vector<std::string_view> cpu_kernel_names();
/// What that level's similarity kernel does at best: pair-samples per cycle and physical core (16
/// with AVX-512, 8 with AVX2, 4 at the baseline), the floor the benchmarks quote.
double cpu_kernel_pair_samples_per_cycle();

/// The library version, "MAJOR.MINOR.PATCH".
std::string version();

/// The name parse_backend accepts for `backend` ("auto", "cpu", "cuda").
std::string_view to_string(Backend backend) noexcept;
/// The name parse_method accepts for `method` ("auto", "fused", "sorted", "naive").
std::string_view to_string(Method method) noexcept;
/// The kind's name, as written in ErrorKind ("InvalidArgument", ...).
std::string_view to_string(ErrorKind kind) noexcept;

/// Parse "auto" | "cpu" | "cuda" and "auto" | "fused" | "sorted" | "naive"; anything else throws InvalidArgument
/// naming `argument` (for example "--backend").
Backend parse_backend(std::string_view text, std::string_view argument = "backend");
/// The Method named `text` (as parse_backend, for methods).
Method parse_method(std::string_view text, std::string_view argument = "method");
/// The names each parse_* accepts, in order (for help texts); likewise similarity.hpp and regret.hpp.
std::vector<std::string_view> backend_names();
/// The names parse_method accepts, in order.
std::vector<std::string_view> method_names();

}  // namespace hpcml
