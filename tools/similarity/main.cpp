// hpcml-similarity: the similarity job on users' files, resumable, and under mpirun across GPUs
// and machines.
//
//   hpcml-similarity INPUT.npy [--y Y.npy] --output OUT.npy [--mode count|all] [--threshold t]
//                    [--tile 1000] [--dtype ...] [--backend ...] [--pairs [--min-count N]]
//                    [--quiet] [--restart]
//
// The output is split into blocks (blocks.hpp; where y is x, the blocks on and above the
// diagonal, each writing its mirror too). Blocks are handed out dynamically (an MPI
// one-sided counter on rank 0 under mpirun, a plain counter otherwise; cluster.hpp), each
// computed by one library call and written at its offset in the output .npy (MPI-IO under
// mpirun, pwrite otherwise) of OUT.npy.partial; no process ever holds the whole output. A block
// is journaled with its checksum only after its bytes are written (journal.hpp), so a rerun
// after a crash or Ctrl-C computes only the missing blocks; a finished run renames the file to
// OUT.npy and removes the journal. With --pairs each block's pairs go to a part file in the
// journal instead (pairs.hpp), gathered into OUT.npy at the end.
#include <hpcml/device.hpp>
#include <hpcml/similarity.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "blocks.hpp"
#include "cluster.hpp"
#include "command_line.hpp"
#include "journal.hpp"
#include "npy.hpp"
#include "pairs.hpp"

namespace fs = std::filesystem;
using namespace hpcml::tools;

namespace {

std::string duration(double seconds) {
    char text[32];
    if (seconds < 90)
        std::snprintf(text, sizeof text, "%.0f s", seconds);
    else if (seconds < 5400)
        std::snprintf(text, sizeof text, "%.0f min %02.0f s", std::floor(seconds / 60), std::fmod(seconds, 60));
    else
        std::snprintf(text, sizeof text, "%.0f h %02.0f min", std::floor(seconds / 3600), std::fmod(seconds / 60, 60));
    return text;
}

// Everything every rank works out on its own before anything collective.
struct Plan {
    Config c;
    Matrix x, y_storage;
    bool has_y = false;
    hpcml::SimilarityOutput output{};
    hpcml::SimilarityOptions options;
    FileLayout layout;
    std::size_t total_bytes = 0;
    std::vector<Block> blocks;
    std::string header, print;
    const Matrix* y() const { return has_y ? &y_storage : nullptr; }
};

Plan prepare(int argc, char** argv, const World& world) {
    Plan p;
    p.c = parse_command_line(argc, argv);
    const Config& c = p.c;
    hpcml::SimilarityOptions& options = p.options;
    options = c.similarity;
    p.output = options.output;
    refuse_output_over_inputs(c);  // on every rank, before any rank writes
    p.x = read_npy(c.input, "INPUT.npy");
    if (!c.y_input.empty()) {
        p.y_storage = read_npy(c.y_input, "--y");
        p.has_y = true;
        if (p.y_storage.rows != p.x.rows)
            throw Exit{1, "--y: has " + std::to_string(p.y_storage.rows) + " samples (rows) but INPUT.npy has " +
                              std::to_string(p.x.rows)};
    }
    const std::size_t samples = p.x.rows, n = p.x.cols, m = p.has_y ? p.y_storage.cols : p.x.cols;
    const hpcml::Context context = hpcml::make_context(options.backend);
    if (context.backend == hpcml::Backend::Cuda) {
        options.backend = hpcml::Backend::Cuda;
        const std::vector<hpcml::DeviceInfo> usable = hpcml::devices();  // their CUDA ordinals
        options.device = usable[static_cast<std::size_t>(world.local_rank) % usable.size()].index;
    } else {
        options.backend = hpcml::Backend::Cpu;
#ifdef _OPENMP
        // Ranks sharing a machine share its cores.
        if (world.local_size > 1 && !std::getenv("OMP_NUM_THREADS"))
            omp_set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / world.local_size));
#endif
    }
    // Checked before any file is touched: counts that fit the output type need the sample count.
    try {
        hpcml::check_similarity_options(options, samples, "--dtype");
    } catch (const hpcml::Error& e) {
        throw Exit{kUsageError, e.what()};
    }

    p.blocks = plan_blocks(n, m, c.tile, p.output, /*symmetric=*/!p.has_y, c.block_bytes);
    if (!c.pairs) {  // with --pairs the partial output stays empty until the parts are gathered
        const auto shape = hpcml::similarity_output_shape(n, m, p.output);
        p.header = npy_header(std::string(hpcml::similarity_output_info(p.output).npy_descr), shape[0], shape[1]);
        p.layout = {p.header.size(), m, hpcml::similarity_output_bytes(1, m, p.output), p.output};
        p.total_bytes =
            p.header.size() + hpcml::similarity_output_bytes(n, m, p.output);  // checked: throws on overflow
    }
    p.print = fingerprint(c, p.x, p.y());
    return p;
}

// The journal's claims that the partial output bears out: a block counts as done only when its
// bytes in the file have the checksum its journal line gives.
std::vector<char> verified_blocks(const std::map<std::size_t, std::uint64_t>& claims, const Plan& p,
                                  const Journal& journal) {
    std::vector<char> done(p.blocks.size(), 0);
    std::vector<unsigned char> bytes;
    std::vector<std::int64_t> pairs;
    for (const auto& [k, claimed] : claims) {
        std::uint64_t sum = block_seed(journal.nonce(), k, p.blocks[k]);
        if (p.c.pairs) {
            done[k] = read_part(journal.part(k), pairs) &&
                      checksum(pairs.data(), pairs.size() * sizeof pairs[0], sum) == claimed;
            continue;
        }
        bool readable = true;
        for_each_region(p.blocks[k], [&](const Block& region) {
            p.layout.for_each_range(region, [&](std::size_t offset, std::size_t length) {
                bytes.resize(length);
                readable = readable && pread(journal.partial_fd(), bytes.data(), length, static_cast<off_t>(offset)) ==
                                           static_cast<ssize_t>(length);
                sum = checksum(bytes.data(), length, sum);
            });
        });
        done[k] = readable && sum == claimed;
    }
    return done;
}

// Under mpirun, an error on one rank once the ranks work together: say so and take the job
// down at once (unwinding would run collective destructors and wait for the other ranks).
[[noreturn]] void abort_job(const World& world) {
    std::fprintf(stderr, "hpcml-similarity: error on rank %d of %d: %s\n", world.rank, world.size,
                 current_message().c_str());
    world.abort_now(1);
}

// Phase 1: every rank reads and checks on its own; an error can be one rank's alone (a file
// missing on one machine), so the ranks agree on going on before any collective step. Null where
// a rank failed (the first failing rank speaks).
std::optional<Plan> prepare_on_every_rank(int argc, char** argv, World& world) {
    std::optional<Plan> plan;
    std::exception_ptr failure;
    try {
        plan.emplace(prepare(argc, argv, world));
    } catch (...) {
        failure = std::current_exception();
    }
    if (const int first = world.first_failure(failure != nullptr); first >= 0) {
        world.speaker = first;
        if (failure) std::rethrow_exception(failure);
        return std::nullopt;
    }
    return plan;
}

// Phase 2: rank 0 decides between resuming and starting over, prepares the files and reads what
// is done; every rank gets its decision, the journal's nonce and the blocks still to compute
// (ranks on other machines may see a shared file system's directory late). Null on an error
// (rank 0 printed it).
std::optional<std::vector<std::size_t>> agree_on_pending(const Plan& p, Journal& journal, World& world) {
    int decision = 0;  // 0 go, 1 error
    std::vector<char> done(p.blocks.size(), 0);
    if (world.rank == 0) {
        try {
            journal.lock();
            done = verified_blocks(journal.open_or_start(p.c, p.print, p.header, p.total_bytes, p.blocks.size()), p,
                                   journal);
        } catch (const fs::filesystem_error& e) {
            std::fprintf(stderr, "hpcml-similarity: error: --output: %s\n", e.what());
            decision = 1;
        } catch (...) {
            std::fprintf(stderr, "hpcml-similarity: error: %s\n", current_message().c_str());
            decision = 1;
        }
    }
    if (world.broadcast(decision) != 0) return std::nullopt;
    std::vector<char> nonce(sizeof(std::uint64_t));
    std::uint64_t value = journal.nonce();
    std::memcpy(nonce.data(), &value, sizeof value);
    world.broadcast(nonce);
    std::memcpy(&value, nonce.data(), sizeof value);
    journal.set_nonce(value);
    world.broadcast(done);
    std::vector<std::size_t> pending;
    for (std::size_t k = 0; k < p.blocks.size(); ++k)
        if (!done[k]) pending.push_back(k);
    return pending;
}

// (i, j) or (i, j, count): the columns of a --pairs row in the plan's mode.
std::size_t pair_width(const Plan& p) { return p.options.mode == hpcml::SimilarityMode::Count ? 3 : 2; }

// Block k computed, written (its own region and its mirror's, or its part file with --pairs)
// and then journaled with its checksum.
void compute_block(const Plan& p, std::size_t k, BlockComputer& computer, OutputFile& file, Journal& journal,
                   std::vector<std::int64_t>& pairs) {
    const Block& b = p.blocks[k];
    std::uint64_t sum = block_seed(journal.nonce(), k, b);
    if (p.c.pairs) {  // the mirror's pairs are the block's, swapped: no transpose
        pairs.clear();
        computer.pairs(b, p.c.min_count, pairs);
        if (b.mirrored) append_mirror_pairs(b, pair_width(p), pairs);
        write_part(journal.part(k), pairs);
        sum = checksum(pairs.data(), pairs.size() * sizeof pairs[0], sum);
    } else {
        const unsigned char* regions[] = {computer.compute(b), nullptr};
        regions[1] = computer.mirror(b);  // from the rows just computed
        int which = 0;
        for_each_region(b, [&](const Block& region) {
            std::size_t written = 0;
            p.layout.for_each_range(region, [&](std::size_t offset, std::size_t length) {
                file.write_at(offset, regions[which] + written, length);
                sum = checksum(regions[which] + written, length, sum);
                written += length;
            });
            ++which;
        });
    }
    journal.record(k, sum);  // only now that the block's bytes are in the file
}

// Rank 0's progress line: blocks handed out of `total`, their rate and the time left.
void report_progress(double handed, std::size_t total, double elapsed) {
    const double rate = handed / elapsed;
    std::fprintf(stderr, "hpcml-similarity: %.0f/%zu blocks (%.1f%%), %.2f blocks/s, ETA %s\n", handed, total,
                 100.0 * handed / std::max<double>(static_cast<double>(total), 1.0), rate,
                 duration((static_cast<double>(total) - handed) / std::max(rate, 1e-9)).c_str());
}

// Phase 3: the ranks take the pending blocks from the shared counter until none are left. An
// error on one rank takes the job down (abort_job) from where it happens, while the collective
// objects are alive. Returns the error the file system reported at close ("" for none).
std::string compute_pending(const Plan& p, const std::vector<std::size_t>& pending, Journal& journal, World& world,
                            std::optional<BlockComputer>& computer, std::chrono::steady_clock::time_point start) {
    std::optional<OutputFile> file;  // outside the try: alive in the handler
    std::optional<Counter> counter;
    try {
        journal.open_log(world.rank);
        file.emplace(journal.partial(), world);
        counter.emplace(world);
        computer.emplace(p.x, p.y(), p.options);
        auto last_progress = start;
        long computed = 0;
        std::vector<std::int64_t> pairs;
        for (long long next = counter->next(); next < static_cast<long long>(pending.size()); next = counter->next()) {
            compute_block(p, pending[static_cast<std::size_t>(next)], *computer, *file, journal, pairs);
            ++computed;
            if (p.c.stop_after >= 0 && computed >= p.c.stop_after)
                world.abort_now(3);  // the test hook: die like a crash
            if (p.c.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(p.c.delay_ms));
            const auto now = std::chrono::steady_clock::now();
            if (!p.c.quiet && world.rank == 0 && now - last_progress > std::chrono::seconds(2)) {
                last_progress = now;
                report_progress(std::min<double>(static_cast<double>(next + 1), static_cast<double>(pending.size())),
                                pending.size(), std::chrono::duration<double>(now - start).count());
            }
        }
        journal.close_log();
        return file->close();  // errors a file system reports only at flush or close
    } catch (...) {
        if (world.size > 1) abort_job(world);
        throw std::runtime_error(current_message());  // a failure while working, not a bad command line: no usage text
    }
}

// Phase 4, rank 0: with --pairs the journaled parts gathered into the output; the output
// renamed into place. Returns the number of pairs (0 without --pairs).
std::size_t finish_output(const Plan& p, Journal& journal, std::optional<BlockComputer>& computer) {
    std::size_t pair_count = 0;
    try {
        if (p.c.pairs) {
            computer.reset();  // its block buffers are not needed now
            std::vector<std::string> parts;
            for (std::size_t k = 0; k < p.blocks.size(); ++k) parts.push_back(journal.part(k));
            pair_count = write_pairs_npy(journal.partial_fd(), parts, pair_width(p), journal.partial());
        }
        journal.finish();  // complete: OUT.npy.partial becomes OUT.npy
    } catch (...) {
        throw std::runtime_error(current_message());
    }
    return pair_count;
}

int run(int argc, char** argv, World& world) {
    const std::optional<Plan> plan = prepare_on_every_rank(argc, argv, world);
    if (!plan) return 1;
    const Plan& p = *plan;
    Journal journal(p.c.output);
    const std::optional<std::vector<std::size_t>> pending = agree_on_pending(p, journal, world);
    if (!pending) return 1;

    const auto start = std::chrono::steady_clock::now();
    std::optional<BlockComputer> computer;
    const std::string close_error = compute_pending(p, *pending, journal, world, computer, start);
    // Every rank's bytes are flushed, or the file is not complete.
    if (const int first = world.first_failure(!close_error.empty()); first >= 0) {
        if (!close_error.empty())
            std::fprintf(stderr, "hpcml-similarity: error on rank %d: %s\n", world.rank, close_error.c_str());
        return 1;
    }
    if (world.rank != 0) return 0;
    const std::size_t pair_count = finish_output(p, journal, computer);
    if (!p.c.quiet) {
        std::fprintf(
            stderr, "hpcml-similarity: %zu blocks computed, %zu already done, %d rank(s), %s backend, %.2f s -> %s%s\n",
            pending->size(), p.blocks.size() - pending->size(), world.size,
            std::string(hpcml::to_string(p.options.backend)).c_str(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), p.c.output.c_str(),
            p.c.pairs ? (" (" + std::to_string(pair_count) + " pairs)").c_str() : "");
    }
    return 0;
}

// --help and --version, answered before MPI starts (nothing to run, so no MPI to start and end):
// the command line parsed on a copy of argv's pointers (MPI_Init may take its own arguments out
// of argv, and the parser removes the flags it knows). Null where the job is to run; its errors
// are reported by the parse after MPI_Init, on the rank that speaks.
std::optional<int> answer_before_mpi(int argc, char** argv) {
    std::vector<char*> copy(argv, argv + argc + 1);
    try {
        (void)parse_command_line(argc, copy.data());
    } catch (const Exit& e) {
        if (e.code == 0) return 0;
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
    if (const std::optional<int> code = answer_before_mpi(argc, argv)) return *code;
    std::optional<World> started;
    try {
        started.emplace(argc, argv);
    } catch (const Exit& e) {  // a build without MPI started by mpirun
        std::fprintf(stderr, "hpcml-similarity: error: %s\n", e.message.c_str());
        return e.code;
    }
    World& world = *started;
    if (world.rank != 0) setenv("HPCML_QUIET", "1", 1);  // rank 0 speaks for all
    try {
        return run(argc, argv, world);
    } catch (const Exit& e) {
        if (e.code != 0 && world.rank == world.speaker) {
            std::fprintf(stderr, "hpcml-similarity: error: %s\n", e.message.c_str());
            if (e.code == kUsageError) std::fprintf(stderr, "try 'hpcml-similarity --help'\n");
        }
        return e.code;
    } catch (const std::bad_alloc&) {
        if (world.rank == world.speaker) std::fprintf(stderr, "hpcml-similarity: error: out of host memory\n");
        return 1;
    } catch (const hpcml::Error& e) {
        // --backend cuda where none can run: exit 2, which scripts tell from a failure.
        const bool no_device = e.kind() == hpcml::ErrorKind::NoDevice || e.kind() == hpcml::ErrorKind::DriverTooOld;
        if (world.rank == world.speaker)
            std::fprintf(stderr, "hpcml-similarity: %s: %s\n", no_device ? "no CUDA device" : "error", e.what());
        return no_device ? 2 : 1;
    } catch (const std::exception& e) {  // hpcml::Error, and std::filesystem's errors
        if (world.rank == world.speaker) std::fprintf(stderr, "hpcml-similarity: error: %s\n", e.what());
        return 1;
    }
}
