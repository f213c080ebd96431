/// @file
/// Regret matching for two-player zero-sum matrix games: Nash equilibria by self-play.
///
/// A is n1 x n2, row-major float32, the row player's gain (the column player's loss). Row
/// utilities are u1 = A y, column utilities u2 = -(x^T A); the instantaneous regret of a player
/// with strategy s is r = u - <u, s> 1, and regret matching plays s = [Q]+ / sum([Q]+) (uniform
/// when no entry is positive), Q being the player's regret accumulator.
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace hpcml {

/// How each iteration updates the cumulative regrets Q from this iteration's regrets r.
enum class RegretVariant {
    /// The seed program, op for op: regret matching with simultaneous updates from uniform
    /// strategies, one iteration behind. Iteration t computes both players' regrets against the
    /// strategies of iteration t - 1, then the new strategies from the cumulative regrets *before*
    /// adding those regrets, then adds them; the average is the uniform mean of the new
    /// strategies. Its eps = 2 max(max R1, max R2) / T is reported as the seed printed it.
    Seed,
    RM,               ///< regret matching: Q += r
    RMPlus,           ///< regret matching+: Q = [Q + r]+
    DCFR,             ///< discounted: Q = Q * (t^1.5 / (t^1.5 + 1) where Q > 0, else 1/2) + r  (alpha 1.5, beta 0)
    PredictiveRMPlus  ///< predictive RM+: play [Q + m]+ with the prediction m = the last regret; Q = [Q + r]+
};

/// How the returned average weighs each iteration's strategy.
enum class Averaging {
    Uniform,   ///< every iteration's strategy weighs 1
    Linear,    ///< iteration t weighs t
    Quadratic  ///< iteration t weighs t^2 (DCFR's gamma = 2)
};

/// backend, method and device: ExecutionOptions (core.hpp); a stream only for
/// solve_matrix_games_device (the host calls synchronise).
struct RegretOptions : ExecutionOptions {
    int iterations = 500;  ///< iterations T of regret matching, >= 1
    /// Defaults: predictive RM+ with alternating updates and quadratic averaging, the fastest
    /// of the variants here on the games we measured (see the README).
    RegretVariant variant = RegretVariant::PredictiveRMPlus;
    bool alternating = true;                     ///< player 2 responds to player 1's new strategy (ignored by Seed)
    Averaging averaging = Averaging::Quadratic;  ///< ignored by Seed (uniform)
    /// The seed's stochastic variant: at each turn both players draw an action from their
    /// strategies (i ~ x, j ~ y) and a player's regret is taken against its own sampled action:
    /// r1 = A[:, j] - A[i, j], r2 = -(A[i, :] - A[i, j]). Counter-based (Philox) draws: the same
    /// rng_seed gives the same run on every backend.
    bool sampled = false;
    std::uint64_t rng_seed = 0;  ///< the key of the sampled variant's draws
    /// The sampled variant: game g of the call draws as game first_game + g of a larger batch,
    /// so a batch solved in pieces (each at its first game's number) draws as one call.
    std::uint64_t first_game = 0;
    int record_every = 0;  ///< > 0: the exact gap of the running average every k iterations
};

/// One point of a solution's gap curve (RegretOptions::record_every).
struct GapPoint {
    int iteration = 0;  ///< iterations done
    double gap = 0.0;   ///< the exact Nash gap of the average profile after them
};

/// What a solve returns: the average profile, its value and gap, the seed's eps and how the call ran.
struct GameSolution {
    std::vector<double> row_strategy;  ///< x-bar, n1 entries summing to 1
    std::vector<double> col_strategy;  ///< y-bar, n2 entries
    double value = 0.0;                ///< x-bar^T A y-bar
    /// max(A y-bar) - min(x-bar^T A) >= 0: how much either player could gain by deviating
    /// from the returned profile (the exact Nash gap, computed with two matrix passes).
    double gap = 0.0;
    /// 2 max(max R1, max R2) / T with R the players' true cumulative regrets (the sums of their
    /// instantaneous regrets, sampled ones when sampled): the seed's eps.
    double eps_bound = 0.0;
    /// Whether eps_bound bounds the gap of the returned profile: only for simultaneous,
    /// full-information updates with the uniform average of the strategies played (not the seed,
    /// which averages other strategies than those its regrets were taken against).
    bool eps_bound_valid = false;
    std::vector<GapPoint> curve;  ///< every record_every iterations, and the last
    RunStats stats;               ///< where and how the call ran
};

/// Solves one game. Throws InvalidArgument for an empty or non-finite A, a null pointer,
/// iterations < 1 or record_every < 0.
GameSolution solve_matrix_game(const float* A, std::size_t n1, std::size_t n2, const RegretOptions& options = {});

/// Solves `batch` games of the same shape, A[b * n1 * n2 + i * n2 + j]; result b is game b's.
std::vector<GameSolution> solve_matrix_games(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                             const RegretOptions& options = {});

/// Where solve_matrix_games_device writes, in the caller's device memory (float64).
struct DeviceGameResults {
    double* row_strategy = nullptr;  ///< batch x n1
    double* col_strategy = nullptr;  ///< batch x n2
    double* value = nullptr;         ///< batch
    double* gap = nullptr;           ///< batch
    double* eps_bound = nullptr;     ///< batch
};

/// solve_matrix_games on device arrays (CUDA): A (batch x n1 x n2, float32) and the results on the
/// device, queued on options.stream with no allocation; returns when complete, or at once while
/// the stream is being captured into a CUDA graph (the work is then the graph's). The same bits
/// as the host call on the GPU (and as the CPU for games of at most 64 actions per player).
/// Games of more than 64 actions need `workspace`: device memory of
/// solve_matrix_games_device_workspace bytes, 256-byte aligned (smaller games need none). A stays
/// on the device unchecked: non-finite payoffs give NaN results. No naive method and no gap curve
/// (record_every must be 0).
RunStats solve_matrix_games_device(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                   const DeviceGameResults& out, const RegretOptions& options = {},
                                   void* workspace = nullptr, std::size_t workspace_bytes = 0);
/// The workspace solve_matrix_games_device needs for these games on options.device: 0 for games
/// of at most 64 actions per player.
std::size_t solve_matrix_games_device_workspace(std::size_t batch, std::size_t n1, std::size_t n2,
                                                const RegretOptions& options = {});

/// Whether both players update from the same profile (one pass over A per iteration serves both):
/// the seed, and every variant with alternating = false.
bool simultaneous_updates(const RegretOptions& options) noexcept;
/// Whether a solution's eps_bound bounds its gap under these options (GameSolution::eps_bound_valid).
bool eps_bound_valid(const RegretOptions& options) noexcept;

/// The variant's name: "seed", "rm", "rm+", "dcfr" or "prm+" (as the tools' --variant takes it).
std::string_view to_string(RegretVariant variant) noexcept;
/// The averaging's name: "uniform", "linear" or "quadratic".
std::string_view to_string(Averaging averaging) noexcept;
/// The variant named `text`; anything else throws InvalidArgument naming `argument`.
RegretVariant parse_regret_variant(std::string_view text, std::string_view argument = "variant");
/// The averaging named `text`; anything else throws InvalidArgument naming `argument`.
Averaging parse_averaging(std::string_view text, std::string_view argument = "averaging");
/// The names parse_regret_variant accepts, in order.
std::vector<std::string_view> regret_variant_names();
/// The names parse_averaging accepts, in order.
std::vector<std::string_view> averaging_names();

}  // namespace hpcml
