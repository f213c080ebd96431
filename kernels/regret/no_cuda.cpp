// A build without CUDA: regret's CUDA entry points (backends.hpp), raising NoDevice. The public
// API never reaches them there (make_context refuses backend Cuda first).
#include "backends.hpp"
#include "common/no_cuda.hpp"

namespace hpcml::detail::regret {

std::vector<GameSolution> cuda_solve(const float*, std::size_t, std::size_t, std::size_t, const RegretOptions&,
                                     const Context&, MemoryTracker&) {
    no_cuda("solve_matrix_games");
}
std::size_t cuda_device_workspace(std::size_t, std::size_t, std::size_t, const Context&) {
    no_cuda("solve_matrix_games_device_workspace");
}
void cuda_solve_device(const float*, std::size_t, std::size_t, std::size_t, const DeviceGameResults&, void*,
                       const RegretOptions&, const Context&) {
    no_cuda("solve_matrix_games_device");
}

}  // namespace hpcml::detail::regret
