// The naive GPU baseline for regret matching: the seed's eager PyTorch program, one launch per
// operation, float32 state (as torch.float32), fresh temporaries every iteration. Per player and
// iteration: a cuBLAS GEMV for the utilities (A y, then A^T x: two passes over A), a dot for the
// expected utility, elementwise kernels for the regret and accumulator updates, an axpy for the
// average, clamp + asum + divide for the next strategy: about a dozen launches, each tiny for
// small games (launch-bound) and two full passes over A for large ones.
#include <cublas_v2.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda.hpp"
#include "math.hpp"

namespace hpcml::detail::regret {

namespace {

void check_cublas(cublasStatus_t status, const char* call) {
    if (status != CUBLAS_STATUS_SUCCESS)
        raise(status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorKind::OutOfMemory : ErrorKind::Cuda,
              std::string(call) + " failed: cuBLAS status " + std::to_string(static_cast<int>(status)));
}
#define HPCML_CUBLAS_CHECK(call) check_cublas((call), #call)

class Cublas {
public:
    explicit Cublas(cudaStream_t stream) {
        HPCML_CUBLAS_CHECK(cublasCreate(&handle_));
        HPCML_CUBLAS_CHECK(cublasSetStream(handle_, stream));
        // Scalars (dots, sums) stay on the device, as tensors do in the eager program.
        HPCML_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_DEVICE));
    }
    ~Cublas() { (void)cublasDestroy(handle_); }
    Cublas(const Cublas&) = delete;
    Cublas& operator=(const Cublas&) = delete;
    cublasHandle_t get() const { return handle_; }

private:
    cublasHandle_t handle_ = nullptr;
};

constexpr int kThreads = 256;
unsigned blocks(int n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void subtract_scalar_kernel(const float* u, const float* scalar, int n, float* r) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) r[k] = u[k] - *scalar;
}
__global__ void add_kernel(float* a, const float* b, int n) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) a[k] += b[k];
}
__global__ void accumulate_kernel(float* q, const float* r_total, const float* r, int n, RegretVariant variant, int t) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) q[k] = variant == RegretVariant::Seed ? r_total[k] : accumulate(variant, q[k], r[k], t);
}
__global__ void clamp_kernel(const float* q, const float* m, int n, bool predictive, float* z) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        const float v = predictive ? q[k] + m[k] : q[k];
        z[k] = v > 0 ? v : 0.0f;
    }
}
__global__ void normalise_kernel(const float* z, const float* total, int n, float* s) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) s[k] = *total > 0 ? z[k] / *total : 1.0f / n;
}
__global__ void fill_kernel(float* a, int n, float value) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) a[k] = value;
}
__global__ void gather_kernel(const float* src, std::size_t stride, int n, float scale, float* dst) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) dst[k] = scale * src[k * stride];
}

struct EagerPlayer {
    EagerPlayer(MemoryTracker& tracker, int n, cudaStream_t stream)
        : n(n), q(tracker, n, stream, "naive regret q"), r_total(tracker, n, stream, "naive regret R"),
          m(tracker, n, stream, "naive regret m"), sum(tracker, n, stream, "naive regret sum"),
          s(tracker, n, stream, "naive regret strategy"), u(tracker, n, stream, "naive regret utility") {
        for (float* p : {q.data(), r_total.data(), m.data(), sum.data(), u.data()})
            HPCML_CUDA_CHECK(cudaMemsetAsync(p, 0, n * sizeof(float), stream));
        fill_kernel<<<blocks(n), kThreads, 0, stream>>>(s.data(), n, 1.0f / n);
        HPCML_LAUNCH_CHECK("fill_kernel");
    }
    int n;
    DeviceBuffer<float> q, r_total, m, sum, s, u;
};

struct Eager {
    cublasHandle_t blas;
    cudaStream_t stream;
    MemoryTracker& tracker;
    const RegretOptions& o;
    float* one;       // device scalar 1 (pointer mode device)
    float* minus_one;
    float* zero;

    void play(EagerPlayer& p) {
        DeviceBuffer<float> z(tracker, p.n, stream, "naive positive regrets"), total(tracker, 1, stream, "naive total");
        clamp_kernel<<<blocks(p.n), kThreads, 0, stream>>>(p.q.data(), p.m.data(), p.n,
                                                           o.variant == RegretVariant::PredictiveRMPlus, z.data());
        HPCML_LAUNCH_CHECK("clamp_kernel");
        HPCML_CUBLAS_CHECK(cublasSasum(blas, p.n, z.data(), 1, total.data()));
        normalise_kernel<<<blocks(p.n), kThreads, 0, stream>>>(z.data(), total.data(), p.n, p.s.data());
        HPCML_LAUNCH_CHECK("normalise_kernel");
    }
    void observe(EagerPlayer& p, int t) {
        DeviceBuffer<float> expected(tracker, 1, stream, "naive expected utility"), r(tracker, p.n, stream, "naive regret");
        HPCML_CUBLAS_CHECK(cublasSdot(blas, p.n, p.u.data(), 1, p.s.data(), 1, expected.data()));
        subtract_scalar_kernel<<<blocks(p.n), kThreads, 0, stream>>>(p.u.data(), expected.data(), p.n, r.data());
        HPCML_LAUNCH_CHECK("subtract_scalar_kernel");
        add_kernel<<<blocks(p.n), kThreads, 0, stream>>>(p.r_total.data(), r.data(), p.n);
        HPCML_LAUNCH_CHECK("add_kernel");
        accumulate_kernel<<<blocks(p.n), kThreads, 0, stream>>>(p.q.data(), p.r_total.data(), r.data(), p.n, o.variant, t);
        HPCML_LAUNCH_CHECK("accumulate_kernel");
        HPCML_CUDA_CHECK(cudaMemcpyAsync(p.m.data(), r.data(), p.n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    }
    void average(EagerPlayer& p, float w) {
        // w is a host number, as in the eager program (a kernel argument there): host pointer
        // mode reads it at the call, with no copy and no synchronisation.
        HPCML_CUBLAS_CHECK(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));
        HPCML_CUBLAS_CHECK(cublasSaxpy(blas, p.n, &w, p.s.data(), 1, p.sum.data(), 1));
        HPCML_CUBLAS_CHECK(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_DEVICE));
    }
};

}  // namespace

GameSolution naive_solve(const float* A_host, std::size_t n1, std::size_t n2, std::size_t index, const RegretOptions& o,
                         cudaStream_t stream, MemoryTracker& tracker) {
    const int N1 = static_cast<int>(n1), N2 = static_cast<int>(n2);
    DeviceBuffer<float> A(tracker, n1 * n2, stream, "naive regret payoffs");
    HPCML_CUDA_CHECK(cudaMemcpyAsync(A.data(), A_host, A.bytes(), cudaMemcpyHostToDevice, stream));
    Cublas blas(stream);
    DeviceBuffer<float> constants(tracker, 3, stream, "naive constants");
    const float host_constants[3] = {1.0f, -1.0f, 0.0f};
    HPCML_CUDA_CHECK(cudaMemcpyAsync(constants.data(), host_constants, sizeof host_constants, cudaMemcpyHostToDevice, stream));
    EagerPlayer p1(tracker, N1, stream), p2(tracker, N2, stream);
    Eager eager{blas.get(), stream, tracker, o, constants.data(), constants.data() + 1, constants.data() + 2};
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));

    // Row-major A (n1 x n2) is, to column-major cuBLAS, A^T with leading dimension n2.
    auto row_utilities = [&](const float* y, float* u1) {  // u1 = A y
        HPCML_CUBLAS_CHECK(cublasSgemv(blas.get(), CUBLAS_OP_T, N2, N1, eager.one, A.data(), N2, y, 1, eager.zero, u1, 1));
    };
    auto column_utilities = [&](const float* x, float* u2) {  // u2 = -(A^T x)
        HPCML_CUBLAS_CHECK(cublasSgemv(blas.get(), CUBLAS_OP_N, N2, N1, eager.minus_one, A.data(), N2, x, 1, eager.zero, u2, 1));
    };
    // The sampled variant draws on the host from the strategy copied back (the eager program
    // syncs for torch.multinomial's result too).
    auto sampled = [&](const EagerPlayer& p, int t, int player) {
        std::vector<float> s(p.n);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(s.data(), p.s.data(), p.n * sizeof(float), cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        return static_cast<int>(sample(s.data(), s.size(), uniform_draw(o.rng_seed, index, t, player)));
    };
    auto column_of_A = [&](int j, float* u1) {
        gather_kernel<<<blocks(N1), kThreads, 0, stream>>>(A.data() + j, n2, N1, 1.0f, u1);
        HPCML_LAUNCH_CHECK("gather_kernel");
    };
    auto row_of_A = [&](int i, float* u2) {
        gather_kernel<<<blocks(N2), kThreads, 0, stream>>>(A.data() + static_cast<std::size_t>(i) * n2, 1, N2, -1.0f, u2);
        HPCML_LAUNCH_CHECK("gather_kernel");
    };

    GameSolution out;
    const bool seed = o.variant == RegretVariant::Seed;
    const bool simultaneous = seed || !o.alternating;
    double weight = 0.0;
    auto averages = [&] {
        std::vector<float> s1(n1), s2(n2);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(s1.data(), p1.sum.data(), n1 * sizeof(float), cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaMemcpyAsync(s2.data(), p2.sum.data(), n2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        out.row_strategy.assign(s1.begin(), s1.end());
        out.col_strategy.assign(s2.begin(), s2.end());
        for (double& v : out.row_strategy) v /= weight;
        for (double& v : out.col_strategy) v /= weight;
        return evaluate({A_host, n1, n2, index}, out.row_strategy.data(), out.col_strategy.data(), false, tracker);
    };
    for (int t = 1; t <= o.iterations; ++t) {
        const float w = seed ? 1.0f : average_weight<float>(o.averaging, t);
        weight += w;
        if (!seed) {
            eager.play(p1);
            eager.play(p2);
        }
        if (simultaneous) {
            if (o.sampled) {
                const int i = sampled(p1, t, 0), j = sampled(p2, t, 1);
                column_of_A(j, p1.u.data());
                row_of_A(i, p2.u.data());
            } else {
                row_utilities(p2.s.data(), p1.u.data());
                column_utilities(p1.s.data(), p2.u.data());
            }
            eager.observe(p1, t);
            eager.observe(p2, t);
            if (seed) {
                eager.play(p1);
                eager.play(p2);
            }
            eager.average(p1, w);
            eager.average(p2, w);
        } else {
            if (o.sampled) {
                column_of_A(sampled(p2, t, 1), p1.u.data());
            } else {
                row_utilities(p2.s.data(), p1.u.data());
            }
            eager.observe(p1, t);
            eager.average(p1, w);
            eager.play(p1);
            if (o.sampled) {
                row_of_A(sampled(p1, t, 0), p2.u.data());
            } else {
                column_utilities(p1.s.data(), p2.u.data());
            }
            eager.observe(p2, t);
            eager.average(p2, w);
        }
        if (o.record_every > 0 && t % o.record_every == 0 && t != o.iterations) out.curve.push_back({t, averages().gap});
    }
    const Evaluation e = averages();
    out.value = e.value;
    out.gap = e.gap;
    if (o.record_every > 0) out.curve.push_back({o.iterations, e.gap});
    std::vector<float> r1(n1), r2(n2);
    HPCML_CUDA_CHECK(cudaMemcpyAsync(r1.data(), p1.r_total.data(), n1 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(r2.data(), p2.r_total.data(), n2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
    out.eps_bound = 2.0 * std::max(*std::max_element(r1.begin(), r1.end()), *std::max_element(r2.begin(), r2.end())) / o.iterations;
    return out;
}

}  // namespace hpcml::detail::regret
