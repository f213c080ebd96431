// The naive GPU baseline for regret matching: the seed's eager PyTorch program, one launch per
// operation, float32 state (as torch.float32), fresh temporaries every iteration, following the
// schedule of math.hpp. Per moving player and turn: a cuBLAS GEMV for the utilities (A y or
// A^T x: two passes over A per iteration), a dot for the expected utility, an elementwise
// observe kernel, an asum for the strategy's total and an elementwise play kernel: about half a
// dozen launches, each tiny for small games (launch-bound), two full passes over A for large ones.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/cublas.hpp"
#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda_launchers.hpp"

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
    explicit Cublas(cudaStream_t stream) : api_(cublas()) {
        HPCML_CUBLAS_CHECK(api_.create(&handle_));
        HPCML_CUBLAS_CHECK(api_.set_stream(handle_, stream));
        // Scalars (dots, sums) stay on the device, as tensors do in the eager program.
        HPCML_CUBLAS_CHECK(api_.set_pointer_mode(handle_, CUBLAS_POINTER_MODE_DEVICE));
    }
    ~Cublas() { (void)api_.destroy(handle_); }
    Cublas(const Cublas&) = delete;
    Cublas& operator=(const Cublas&) = delete;
    cublasHandle_t get() const { return handle_; }
    const CublasLibrary& api() const { return api_; }

private:
    const CublasLibrary& api_;
    cublasHandle_t handle_ = nullptr;
};

constexpr int kThreads = 256;
unsigned blocks(int n) { return blocks_for(static_cast<std::size_t>(n), kThreads); }

__global__ void reset_kernel(float* R, float* Q, float* sum, float* s, int n) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) {
        R[k] = Q[k] = sum[k] = 0.0f;
        s[k] = 1.0f / n;
    }
}
__global__ void observe_kernel(const Schedule sc, const int t, const float* u, const float* baseline, const float* s,
                               float* R, float* Q, float* sum, float* z, int n) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) z[k] = sc.observe(t, u[k], *baseline, s[k], R[k], Q[k], sum[k]);
}
__global__ void play_kernel(const Schedule sc, const int t, const float* z, const float* total, float* s, float* sum,
                            int n) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) s[k] = sc.play(t, z[k], *total, static_cast<std::size_t>(n), sum[k]);
}
__global__ void gather_kernel(const float* src, std::size_t stride, int n, float scale, float* dst) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) dst[k] = scale * src[k * stride];
}

struct EagerPlayer {
    EagerPlayer(MemoryTracker& tracker, int n, cudaStream_t stream)
        : n(n),
          R(tracker, n, stream, "naive regret R"),
          Q(tracker, n, stream, "naive regret Q"),
          sum(tracker, n, stream, "naive regret sum"),
          s(tracker, n, stream, "naive regret strategy"),
          u(tracker, n, stream, "naive regret utility") {
        reset_kernel<<<blocks(n), kThreads, 0, stream>>>(R.data(), Q.data(), sum.data(), s.data(), n);
        HPCML_LAUNCH_CHECK("reset_kernel");
    }
    int n;
    DeviceBuffer<float> R, Q, sum, s, u;

    std::vector<float> download(const DeviceBuffer<float>& field, cudaStream_t stream) const {
        std::vector<float> host(n);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(host.data(), field.data(), n * sizeof(float), cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        return host;
    }
};

// The eager program's side of iterate() (math.hpp), for one game.
struct EagerIteration {
    const Schedule& sc;
    const Cublas& blas;
    const float* constants;  // 1, -1, 0 on the device (cuBLAS's device pointer mode)
    cudaStream_t stream;
    MemoryTracker& tracker;
    const float* A;  // n1 x n2, row-major, on the device
    int n1, n2;
    std::size_t index;  // the game's number in its batch: keys the sampled draws
    EagerPlayer (&p)[2];
    std::size_t action[2] = {0, 0};  // the turn's sampled actions

    void utilities(int t, int turn, const bool* moves) {
        // The sampled actions are drawn on the host from the strategies copied back (the eager
        // program syncs for torch.multinomial's result too).
        for (int q = 0; sc.sampled && q < 2; ++q) {
            const std::vector<float> s = p[q].download(p[q].s, stream);
            action[q] =
                sample(s.data(), s.size(), uniform_draw(sc.rng_seed, sc.game_key(index), t, sc.draw_key(turn, q)));
        }
        for (int q = 0; q < 2; ++q) {
            if (!moves[q]) continue;
            DeviceBuffer<float> fresh(tracker, p[q].n, stream, "naive regret utilities");
            if (sc.sampled) {
                gather(q, fresh.data());
            } else {
                gemv(q, fresh.data());
            }
            HPCML_CUDA_CHECK(
                cudaMemcpyAsync(p[q].u.data(), fresh.data(), fresh.bytes(), cudaMemcpyDeviceToDevice, stream));
        }
    }

    void move(int t, const bool* moves) {
        for (int q = 0; q < 2; ++q) {
            if (!moves[q]) continue;
            EagerPlayer& e = p[q];
            DeviceBuffer<float> expected(tracker, 1, stream, "naive expected utility"),
                z(tracker, e.n, stream, "naive strategy numerators"), total(tracker, 1, stream, "naive total");
            if (!sc.sampled)
                HPCML_CUBLAS_CHECK(blas.api().sdot(blas.get(), e.n, e.u.data(), 1, e.s.data(), 1, expected.data()));
            const float* baseline = sc.sampled ? e.u.data() + action[q] : expected.data();
            observe_kernel<<<blocks(e.n), kThreads, 0, stream>>>(sc, t, e.u.data(), baseline, e.s.data(), e.R.data(),
                                                                 e.Q.data(), e.sum.data(), z.data(), e.n);
            HPCML_LAUNCH_CHECK("observe_kernel");
            HPCML_CUBLAS_CHECK(blas.api().sasum(blas.get(), e.n, z.data(), 1, total.data()));  // z >= 0
            play_kernel<<<blocks(e.n), kThreads, 0, stream>>>(sc, t, z.data(), total.data(), e.s.data(), e.sum.data(),
                                                              e.n);
            HPCML_LAUNCH_CHECK("play_kernel");
        }
    }

    // Row-major A (n1 x n2) is, to column-major cuBLAS, A^T with leading dimension n2.
    void gemv(int q, float* u) {
        if (q == 0) {  // u1 = A y
            HPCML_CUBLAS_CHECK(blas.api().sgemv(blas.get(), CUBLAS_OP_T, n2, n1, constants, A, n2, p[1].s.data(), 1,
                                                constants + 2, u, 1));
        } else {  // u2 = -(A^T x)
            HPCML_CUBLAS_CHECK(blas.api().sgemv(blas.get(), CUBLAS_OP_N, n2, n1, constants + 1, A, n2, p[0].s.data(), 1,
                                                constants + 2, u, 1));
        }
    }
    // u is a column or a negated row of A at the opponent's sampled action.
    void gather(int q, float* u) {
        if (q == 0) {
            gather_kernel<<<blocks(n1), kThreads, 0, stream>>>(A + action[1], static_cast<std::size_t>(n2), n1, 1.0f,
                                                               u);
        } else {
            gather_kernel<<<blocks(n2), kThreads, 0, stream>>>(A + action[0] * n2, 1, n2, -1.0f, u);
        }
        HPCML_LAUNCH_CHECK("gather_kernel");
    }
};

// One game, start to end, on the eager program's terms.
GameSolution eager_solve(const float* A_host, std::size_t n1, std::size_t n2, std::size_t index, const Schedule& sc,
                         const Cublas& blas, const float* constants, cudaStream_t stream, MemoryTracker& tracker) {
    DeviceBuffer<float> A(tracker, n1 * n2, stream, "naive regret payoffs");
    HPCML_CUDA_CHECK(cudaMemcpyAsync(A.data(), A_host, A.bytes(), cudaMemcpyHostToDevice, stream));
    EagerPlayer p[2] = {EagerPlayer(tracker, static_cast<int>(n1), stream),
                        EagerPlayer(tracker, static_cast<int>(n2), stream)};
    EagerIteration backend{
        sc, blas, constants, stream, tracker, A.data(), static_cast<int>(n1), static_cast<int>(n2), index, p};
    auto evaluate_average = [&](int t) {
        std::array<std::vector<double>, 2> average;  // a C array would decay to a dangling pointer in the pair
        const double weight = sc.total_weight(t);
        for (int q = 0; q < 2; ++q) {
            const std::vector<float> sum = p[q].download(p[q].sum, stream);
            for (float v : sum) average[q].push_back(v / weight);
        }
        const Evaluation e = evaluate({A_host, n1, n2, index}, average[0].data(), average[1].data(), false, tracker);
        return std::pair{e, std::move(average)};
    };

    GameSolution out;
    for (int t = 1; t <= sc.iterations; ++t) {
        iterate(sc, t, backend);
        if (sc.records_at(t)) out.curve.push_back({t, evaluate_average(t).first.gap});
    }
    auto [e, average] = evaluate_average(sc.iterations);
    out.row_strategy = std::move(average[0]);
    out.col_strategy = std::move(average[1]);
    out.value = e.value;
    out.gap = e.gap;
    if (sc.records() > 0) out.curve.push_back({sc.iterations, e.gap});
    double max_regret = -std::numeric_limits<double>::infinity();
    for (const EagerPlayer& q : p)
        for (float r : q.download(q.R, stream)) max_regret = std::max<double>(max_regret, r);
    out.eps_bound = 2.0 * max_regret / sc.iterations;
    return out;
}

}  // namespace

std::vector<GameSolution> naive_solve(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                      const Schedule& sc, cudaStream_t stream, MemoryTracker& tracker) {
    Cublas blas(stream);
    DeviceBuffer<float> constants(tracker, 3, stream, "naive constants");
    static const float host_constants[3] = {1.0f, -1.0f, 0.0f};
    HPCML_CUDA_CHECK(
        cudaMemcpyAsync(constants.data(), host_constants, sizeof host_constants, cudaMemcpyHostToDevice, stream));
    std::vector<GameSolution> out;
    for (std::size_t b = 0; b < batch; ++b)
        out.push_back(eager_solve(A + b * n1 * n2, n1, n2, b, sc, blas, constants.data(), stream, tracker));
    return out;
}

}  // namespace hpcml::detail::regret
