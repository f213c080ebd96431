// hpcml-similarity: the similarity job on users' files, resumable, and under mpirun across GPUs
// and machines.
//
//   hpcml-similarity INPUT.npy [--y Y.npy] --output OUT.npy [--mode count|all] [--threshold t]
//                    [--tile 1000] [--dtype ...] [--backend ...] [--quiet] [--restart]
//
// The output is split into blocks of `tile` rows (by up to 256 MB of columns), each a row of
// tile x tile tiles. Blocks are handed out dynamically (an MPI one-sided counter on rank 0 under
// mpirun, a plain counter otherwise), each computed with hpcml::similarity and written at its
// offset in the output .npy (MPI-IO under mpirun, pwrite otherwise); no process ever holds the
// whole output. A block's index is appended to the journal (OUT.npy.journal/) only after its
// bytes are written, so a rerun after a crash or Ctrl-C computes only the missing blocks; a
// finished run removes the journal.
#include <hpcml/device.hpp>
#include <hpcml/similarity.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#if HPCML_WITH_MPI
#include <mpi.h>
#endif

#include "npy.hpp"

namespace fs = std::filesystem;

namespace {

struct Config {
    std::string input, y_input, output, mode = "count", dtype, backend = "auto";
    float threshold = 1.0f;
    std::size_t tile = 1000;
    bool quiet = false, restart = false;
    long stop_after = -1;  // test hook: exit after this many blocks (as a crash would)
};

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: hpcml-similarity INPUT.npy [--y Y.npy] --output OUT.npy [--mode count|all]\n"
                 "                        [--threshold t] [--tile 1000] [--dtype int32|uint16|uint8|bool|bitmask]\n"
                 "                        [--backend auto|cpu|cuda] [--quiet] [--restart]\n"
                 "\n"
                 "S[i,j] = #{s : |x[s,i] - y[s,j]| < t} (count) or every sample within t (all), for x in\n"
                 "INPUT.npy, shape (samples, features); y = x unless --y. OUT.npy opens with\n"
                 "np.load(OUT, mmap_mode='r'); bitmask output has shape (n, ceil(m / 8)), rows packed as\n"
                 "np.packbits(S, axis=1, bitorder='little'). Inputs: float32 C order is read as is; Fortran\n"
                 "order is transposed and other real dtypes converted to float32.\n"
                 "\n"
                 "Work goes in blocks of --tile rows. Resumable: finished blocks are journaled in\n"
                 "OUT.npy.journal/; rerunning the same command computes only the missing ones; --restart\n"
                 "starts over. Under mpirun -np R each rank takes a GPU (local rank modulo the visible\n"
                 "devices; the CPU where there is none) and blocks are handed out dynamically.\n"
                 "\n"
                 "  --mode M         count (default) or all\n"
                 "  --threshold t    finite, >= 0 (default 1)\n"
                 "  --tile N         output tile edge (default 1000)\n"
                 "  --dtype D        int32 (count default), uint16, uint8, bool (all default), bitmask\n"
                 "  --backend B      auto (default), cpu, cuda\n"
                 "  --quiet          no progress line on stderr\n"
                 "  --restart        ignore and replace an existing journal and output\n");
}

struct Exit {
    int code;
    std::string message;
};

class World {
public:
    World(int& argc, char**& argv) {
#if HPCML_WITH_MPI
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm local;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &local_rank);
        MPI_Comm_size(local, &local_size);
        MPI_Comm_free(&local);
#else
        (void)argc, (void)argv;
#endif
    }
    ~World() {
#if HPCML_WITH_MPI
        MPI_Finalize();
#endif
    }
    void barrier() const {
#if HPCML_WITH_MPI
        MPI_Barrier(MPI_COMM_WORLD);
#endif
    }
    // Rank 0's decision, known to every rank.
    int broadcast(int value) const {
#if HPCML_WITH_MPI
        MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
        return value;
    }
    void broadcast(std::vector<char>& bytes) const {  // the same size on every rank
#if HPCML_WITH_MPI
        for (std::size_t k = 0; k < bytes.size(); k += INT_MAX)
            MPI_Bcast(bytes.data() + k, static_cast<int>(std::min<std::size_t>(bytes.size() - k, INT_MAX)), MPI_CHAR, 0, MPI_COMM_WORLD);
#else
        (void)bytes;
#endif
    }
    // The lowest rank that failed (each rank knows only about itself), or -1 where none did.
    int first_failure(bool failed) const {
#if HPCML_WITH_MPI
        int mine = failed ? rank : size, lowest = size;
        MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        return lowest < size ? lowest : -1;
#else
        return failed ? 0 : -1;
#endif
    }
    [[noreturn]] void abort_now(int code) const {
#if HPCML_WITH_MPI
        if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
        std::_Exit(code);
    }
    int rank = 0, size = 1, local_rank = 0, local_size = 1;
    int speaker = 0;  // the rank that reports errors (rank 0, unless another failed alone)
};

// Hands out tile numbers 0, 1, 2, ... across all ranks.
class Counter {
public:
    explicit Counter(const World& world) {
#if HPCML_WITH_MPI
        MPI_Win_allocate(world.rank == 0 ? sizeof(long long) : 0, sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &base_, &window_);
        if (world.rank == 0) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, window_);
            *base_ = 0;
            MPI_Win_unlock(0, window_);
        }
        MPI_Barrier(MPI_COMM_WORLD);
#else
        (void)world;
#endif
    }
    ~Counter() {
#if HPCML_WITH_MPI
        MPI_Win_free(&window_);
#endif
    }
    long long next() {
#if HPCML_WITH_MPI
        const long long one = 1;
        long long value = 0;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window_);
        MPI_Fetch_and_op(&one, &value, MPI_LONG_LONG, 0, 0, MPI_SUM, window_);
        MPI_Win_unlock(0, window_);
        return value;
#else
        return value_++;
#endif
    }

private:
#if HPCML_WITH_MPI
    MPI_Win window_;
    long long* base_ = nullptr;
#else
    long long value_ = 0;
#endif
};

// Writes byte ranges of the output file (MPI-IO under MPI, pwrite otherwise).
class OutputFile {
public:
    OutputFile(const std::string& path, const World& world) {
#if HPCML_WITH_MPI
        if (MPI_File_open(MPI_COMM_WORLD, path.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file_) != MPI_SUCCESS)
            throw Exit{1, "--output: cannot open '" + path + "' for writing"};
        (void)world;
#else
        (void)world;
        fd_ = open(path.c_str(), O_WRONLY);
        if (fd_ < 0) throw Exit{1, "--output: cannot open '" + path + "': " + std::strerror(errno)};
#endif
    }
    ~OutputFile() {
#if HPCML_WITH_MPI
        MPI_File_close(&file_);
#else
        if (fd_ >= 0) close(fd_);
#endif
    }
    void write_at(std::size_t offset, const void* data, std::size_t bytes) {
#if HPCML_WITH_MPI
        // MPI counts are ints: a block over 2 GiB (a large --tile) goes in pieces.
        const char* p = static_cast<const char*>(data);
        while (bytes > 0) {
            const int piece = static_cast<int>(std::min<std::size_t>(bytes, std::size_t{1} << 30));
            MPI_Status status;
            if (MPI_File_write_at(file_, static_cast<MPI_Offset>(offset), p, piece, MPI_BYTE, &status) != MPI_SUCCESS)
                throw Exit{1, "--output: write failed"};
            p += piece;
            offset += static_cast<std::size_t>(piece);
            bytes -= static_cast<std::size_t>(piece);
        }
#else
        const char* p = static_cast<const char*>(data);
        while (bytes > 0) {
            const ssize_t n = pwrite(fd_, p, bytes, static_cast<off_t>(offset));
            if (n < 0) {
                if (errno == EINTR) continue;
                throw Exit{1, std::string("--output: write failed: ") + std::strerror(errno)};
            }
            p += n;
            offset += static_cast<std::size_t>(n);
            bytes -= static_cast<std::size_t>(n);
        }
#endif
    }

private:
#if HPCML_WITH_MPI
    MPI_File file_;
#else
    int fd_ = -1;
#endif
};

Config parse(int argc, char** argv) {
    Config c;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw Exit{1, a + ": missing value"};
            return argv[++i];
        };
        auto integer = [&](long long minimum) {
            const std::string v = value();
            char* end = nullptr;
            const long long n = std::strtoll(v.c_str(), &end, 10);
            if (v.empty() || *end || n < minimum) throw Exit{1, a + ": expected an integer >= " + std::to_string(minimum) + ", got '" + v + "'"};
            return n;
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            throw Exit{0, ""};
        } else if (a == "--y") {
            c.y_input = value();
        } else if (a == "--output") {
            c.output = value();
        } else if (a == "--mode") {
            c.mode = value();
            (void)hpcml::parse_similarity_mode(c.mode, "--mode");  // checked here, used by prepare()
        } else if (a == "--threshold") {
            const std::string v = value();
            char* end = nullptr;
            c.threshold = std::strtof(v.c_str(), &end);
            if (v.empty() || *end) throw Exit{1, "--threshold: expected a number, got '" + v + "'"};
        } else if (a == "--tile") {
            c.tile = static_cast<std::size_t>(integer(1));
        } else if (a == "--dtype") {
            c.dtype = value();
        } else if (a == "--backend") {
            c.backend = value();
        } else if (a == "--quiet") {
            c.quiet = true;
        } else if (a == "--restart") {
            c.restart = true;
        } else if (a == "--stop-after") {
            c.stop_after = integer(0);
        } else if (!a.empty() && a[0] == '-') {
            throw Exit{1, "unknown option '" + a + "'"};
        } else if (c.input.empty()) {
            c.input = a;
        } else {
            throw Exit{1, "unexpected argument '" + a + "' (one INPUT.npy; y goes with --y)"};
        }
    }
    if (c.input.empty()) throw Exit{1, "INPUT.npy: missing"};
    if (c.output.empty()) throw Exit{1, "--output: missing"};
    if (c.dtype.empty()) c.dtype = c.mode == "count" ? "int32" : "bool";
    return c;
}

hpcml::SimilarityOutput output_of(const Config& c) {
    return hpcml::resolve_output({.mode = hpcml::parse_similarity_mode(c.mode, "--mode"),
                                  .output = hpcml::parse_similarity_output(c.dtype, "--dtype")});
}

const char* descr_of(hpcml::SimilarityOutput o) {
    switch (o) {
        case hpcml::SimilarityOutput::Int32: return "<i4";
        case hpcml::SimilarityOutput::UInt16: return "<u2";
        case hpcml::SimilarityOutput::Bool: return "|b1";
        default: return "|u1";  // UInt8, Bitmask
    }
}

// What the journal must agree with before a rerun may reuse it.
std::string fingerprint(const Config& c, const hpcml::tools::Matrix& x, const hpcml::tools::Matrix* y) {
    std::ostringstream f;
    auto file = [&](const std::string& path) {
        struct stat st{};
        stat(path.c_str(), &st);
        f << fs::absolute(path).string() << " bytes=" << st.st_size << " mtime=" << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec;
    };
    f << "hpcml-similarity 1\nx ";
    file(c.input);
    f << " shape=" << x.rows << "x" << x.cols << "\ny ";
    if (y) {
        file(c.y_input);
        f << " shape=" << y->rows << "x" << y->cols;
    } else {
        f << "= x";
    }
    char threshold[32];
    std::snprintf(threshold, sizeof threshold, "%.9g", c.threshold);
    f << "\nmode=" << c.mode << " threshold=" << threshold << " tile=" << c.tile << " dtype=" << c.dtype << "\n";
    return f.str();
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string duration(double seconds) {
    char text[32];
    if (seconds < 90) std::snprintf(text, sizeof text, "%.0f s", seconds);
    else if (seconds < 5400) std::snprintf(text, sizeof text, "%.0f min %02.0f s", std::floor(seconds / 60), std::fmod(seconds, 60));
    else std::snprintf(text, sizeof text, "%.0f h %02.0f min", std::floor(seconds / 3600), std::fmod(seconds / 60, 60));
    return text;
}

struct Tile {
    std::size_t r0, c0, rows, cols;
};

// Everything every rank works out on its own before anything collective.
struct Plan {
    Config c;
    hpcml::tools::Matrix x, y_storage;
    bool has_y = false;
    hpcml::SimilarityOutput output{};
    hpcml::SimilarityOptions options;
    std::size_t samples = 0, n = 0, m = 0, row_bytes = 0, total_bytes = 0;
    std::vector<Tile> tiles;
    std::string header, print;
    const hpcml::tools::Matrix* y() const { return has_y ? &y_storage : nullptr; }
};

Plan prepare(int argc, char** argv, const World& world) {
    Plan p;
    p.c = parse(argc, argv);
    const Config& c = p.c;
    p.output = output_of(c);
    p.x = hpcml::tools::read_npy(c.input, "INPUT.npy");
    if (!c.y_input.empty()) {
        p.y_storage = hpcml::tools::read_npy(c.y_input, "--y");
        p.has_y = true;
        if (p.y_storage.rows != p.x.rows)
            throw Exit{1, "--y: has " + std::to_string(p.y_storage.rows) + " samples (rows) but INPUT.npy has " + std::to_string(p.x.rows)};
    }
    const hpcml::SimilarityOutput output = p.output;
    p.samples = p.x.rows;
    p.n = p.x.cols;
    p.m = p.has_y ? p.y_storage.cols : p.x.cols;
    const std::size_t samples = p.samples, n = p.n, m = p.m;
    hpcml::SimilarityOptions& options = p.options;
    options.threshold = c.threshold;
    options.mode = hpcml::parse_similarity_mode(c.mode, "--mode");
    options.output = output;
    options.backend = hpcml::parse_backend(c.backend, "--backend");
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
    // The library checks the options (threshold, mode and dtype, counts that fit) on an empty
    // output with the real sample count, before any file is touched.
    (void)hpcml::similarity({nullptr, samples, 0}, {nullptr, samples, 0}, [](const hpcml::SimilarityTile&) {}, options);

    // Work is handed out in blocks: `tile` rows of the output by as many columns as fit in
    // 256 MB (all of them, usually), so that each block is one library call (which tiles it
    // and, on the GPU, batches its tiles per launch) and its rows go to the file in long
    // writes. Bitmask blocks start on a byte.
    const std::size_t tile_cols = output == hpcml::SimilarityOutput::Bitmask ? (c.tile + 7) / 8 * 8 : c.tile;
    const std::size_t bytes_per_row_of_block = hpcml::similarity_output_bytes(1, tile_cols, output);
    const std::size_t budget = std::size_t{256} << 20;
    const std::size_t block_cols = std::min(
        std::max<std::size_t>(m, 1),
        std::max<std::size_t>(1, budget / std::max<std::size_t>(c.tile * bytes_per_row_of_block, 1)) * tile_cols);
    for (std::size_t r = 0; r < n; r += c.tile)
        for (std::size_t col = 0; col < m; col += block_cols)
            p.tiles.push_back({r, col, std::min(c.tile, n - r), std::min(block_cols, m - col)});
    options.tile = c.tile;
    p.header = hpcml::tools::npy_header(descr_of(output), n, output == hpcml::SimilarityOutput::Bitmask ? (m + 7) / 8 : m);
    p.row_bytes = hpcml::similarity_output_bytes(1, m, output);
    p.total_bytes = p.header.size() + hpcml::similarity_output_bytes(n, m, output);  // checked: throws on overflow
    p.print = fingerprint(c, p.x, p.y());
    return p;
}

// The first `count` bytes of `path` (fewer where it is shorter).
std::string read_prefix(const std::string& path, std::size_t count) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes(count, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(count));
    bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return bytes;
}

// Marks the blocks the journal's rank files list. Only whole lines count: a line cut short by
// a crash could otherwise name another block ("12" of "123").
void read_journal(const fs::path& journal, std::vector<char>& done) {
    for (const auto& entry : fs::directory_iterator(journal)) {
        if (entry.path().filename().string().rfind("rank-", 0) != 0) continue;
        const std::string text = read_text(entry.path());
        for (std::size_t start = 0, eol; (eol = text.find('\n', start)) != std::string::npos; start = eol + 1) {
            const std::string line = text.substr(start, eol - start);
            char* end = nullptr;
            errno = 0;
            const unsigned long long k = std::strtoull(line.c_str(), &end, 10);
            if (!line.empty() && *end == '\0' && errno == 0 && k < done.size()) done[k] = 1;
        }
    }
}

// Under mpirun, an error on one rank once the ranks work together: say so and take the job
// down (unwinding would leave the others waiting in a collective call forever).
[[noreturn]] void abort_job(const World& world) {
    std::string message = "unknown error";
    try {
        throw;
    } catch (const Exit& e) {
        message = e.message;
    } catch (const std::exception& e) {
        message = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "hpcml-similarity: error on rank %d of %d: %s\n", world.rank, world.size, message.c_str());
    world.abort_now(1);
}

int run(int argc, char** argv, World& world) {
    // Every rank reads and checks on its own; an error can be one rank's alone (a file missing
    // on one machine), so the ranks agree on going on before any collective step.
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
        return 1;
    }
    const Plan& p = *plan;
    const Config& c = p.c;
    const hpcml::tools::Matrix& x = p.x;
    const hpcml::tools::Matrix* y = p.y();
    const std::size_t samples = p.samples, n = p.n, m = p.m, row_bytes = p.row_bytes, total_bytes = p.total_bytes;
    const hpcml::SimilarityOutput output = p.output;
    const hpcml::SimilarityOptions& options = p.options;
    const std::vector<Tile>& tiles = p.tiles;
    const std::string& header = p.header;

    // Rank 0 decides between resuming and starting over, prepares the files and reads what is
    // done; every rank gets its decision and list (ranks on other machines may see a shared
    // file system's directory late).
    const fs::path journal = c.output + ".journal";
    int decision = 0;  // 0 go, 1 error (message printed by rank 0)
    std::vector<char> done(tiles.size(), 0);
    if (world.rank == 0) {
        try {
            const bool have_journal = fs::exists(journal / "command");
            bool resume = false;
            if (have_journal && !c.restart) {
                if (read_text(journal / "command") != p.print)
                    throw Exit{1, "--output: the journal " + journal.string() + " was written by a different command or input; "
                                  "rerun the same command to resume, or add --restart to start over"};
                resume = fs::exists(c.output) && fs::file_size(c.output) == total_bytes && read_prefix(c.output, header.size()) == header;
                if (!resume && !c.quiet)
                    std::fprintf(stderr, "hpcml-similarity: %s is missing or not the journal's output (size or header); starting over\n",
                                 c.output.c_str());
            }
            if (resume) {
                read_journal(journal, done);
            } else {
                std::error_code ignore;
                fs::remove_all(journal, ignore);
                std::ofstream out(c.output, std::ios::binary | std::ios::trunc);
                if (!out) throw Exit{1, "--output: cannot write '" + c.output + "'"};
                out << header;
                out.close();
                if (!out) throw Exit{1, "--output: cannot write '" + c.output + "'"};
                fs::resize_file(c.output, total_bytes);
                fs::create_directories(journal);
                std::ofstream command(journal / "command");
                command << p.print;
                command.close();
                if (!command) throw Exit{1, "--output: cannot write the journal in " + journal.string()};
            }
        } catch (const Exit& e) {
            std::fprintf(stderr, "hpcml-similarity: error: %s\n", e.message.c_str());
            decision = 1;
        } catch (const fs::filesystem_error& e) {
            std::fprintf(stderr, "hpcml-similarity: error: --output: %s\n", e.what());
            decision = 1;
        }
    }
    if (world.broadcast(decision) != 0) return 1;
    world.broadcast(done);
    std::vector<std::size_t> pending;
    for (std::size_t k = 0; k < tiles.size(); ++k)
        if (!done[k]) pending.push_back(k);

    // From here on the ranks work together: an error on one takes the job down (abort_job).
    std::FILE* log = nullptr;
    std::optional<OutputFile> file;
    std::optional<Counter> counter;
    const auto start = std::chrono::steady_clock::now();
    try {
        log = std::fopen((journal / ("rank-" + std::to_string(world.rank) + "-" + std::to_string(getpid()))).c_str(), "a");
        if (!log) throw Exit{1, "--output: cannot write the journal in " + journal.string()};
        file.emplace(c.output, world);
        counter.emplace(world);

        auto last_progress = start;
        std::vector<float> xt, yt;
        std::vector<unsigned char> buffer;
        long computed = 0;
        for (long long next = counter->next(); next < static_cast<long long>(pending.size()); next = counter->next()) {
            const Tile& t = tiles[pending[static_cast<std::size_t>(next)]];
            // This tile's columns of x and y, packed.
            const hpcml::tools::Matrix& ys = y ? *y : x;
            xt.resize(samples * t.rows);
            yt.resize(samples * t.cols);
            for (std::size_t s = 0; s < samples; ++s) {
                std::copy_n(x.data.data() + s * n + t.r0, t.rows, xt.data() + s * t.rows);
                std::copy_n(ys.data.data() + s * m + t.c0, t.cols, yt.data() + s * t.cols);
            }
            const std::size_t tile_row_bytes = hpcml::similarity_output_bytes(1, t.cols, output);
            buffer.resize(t.rows * tile_row_bytes);
            hpcml::similarity({xt.data(), samples, t.rows}, {yt.data(), samples, t.cols}, buffer.data(), options);
            const std::size_t column_offset = hpcml::similarity_output_bytes(1, t.c0, output);
            if (t.cols == m) {
                file->write_at(header.size() + t.r0 * row_bytes, buffer.data(), buffer.size());
            } else {
                for (std::size_t r = 0; r < t.rows; ++r)
                    file->write_at(header.size() + (t.r0 + r) * row_bytes + column_offset, buffer.data() + r * tile_row_bytes, tile_row_bytes);
            }
            // Journaled only now that the tile's bytes are in the file.
            std::fprintf(log, "%zu\n", pending[static_cast<std::size_t>(next)]);
            if (std::fflush(log) != 0) throw Exit{1, "--output: cannot write the journal in " + journal.string()};
            ++computed;
            if (c.stop_after >= 0 && computed >= c.stop_after) world.abort_now(3);  // the test hook: die like a crash
            const auto now = std::chrono::steady_clock::now();
            if (!c.quiet && world.rank == 0 && now - last_progress > std::chrono::seconds(2)) {
                last_progress = now;
                const double elapsed = std::chrono::duration<double>(now - start).count();
                const double handed = std::min<double>(static_cast<double>(next + 1), static_cast<double>(pending.size()));
                const double rate = handed / elapsed;
                std::fprintf(stderr, "hpcml-similarity: %.0f/%zu blocks (%.1f%%), %.2f blocks/s, ETA %s\n", handed, pending.size(),
                             100.0 * handed / std::max<double>(static_cast<double>(pending.size()), 1.0), rate,
                             duration((static_cast<double>(pending.size()) - handed) / std::max(rate, 1e-9)).c_str());
            }
        }
        std::fclose(log);
        log = nullptr;
    } catch (...) {
        if (world.size > 1) abort_job(world);
        if (log) std::fclose(log);
        try {
            throw;
        } catch (const Exit& e) {  // a failure while working, not a bad command line: no usage text
            throw std::runtime_error(e.message);
        }
    }
    world.barrier();
    if (world.rank == 0) {  // complete: the journal has done its job
        std::error_code ignore;
        fs::remove_all(journal, ignore);
    }
    if (world.rank == 0 && !c.quiet) {
        std::fprintf(stderr, "hpcml-similarity: %zu blocks computed, %zu already done, %d rank(s), %s backend, %.2f s -> %s\n",
                     pending.size(), tiles.size() - pending.size(), world.size, std::string(hpcml::to_string(options.backend)).c_str(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), c.output.c_str());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    World world(argc, argv);
    if (world.rank != 0) setenv("HPCML_QUIET", "1", 1);  // rank 0 speaks for all
    try {
        return run(argc, argv, world);
    } catch (const Exit& e) {
        if (e.code != 0 && world.rank == world.speaker) {
            std::fprintf(stderr, "hpcml-similarity: error: %s\n\n", e.message.c_str());
            if (e.code == 1 && e.message.find("journal") == std::string::npos) usage(stderr);
        }
        return e.code;
    } catch (const std::bad_alloc&) {
        if (world.rank == world.speaker) std::fprintf(stderr, "hpcml-similarity: error: out of host memory\n");
        return 1;
    } catch (const std::exception& e) {  // hpcml::Error, and std::filesystem's errors
        if (world.rank == world.speaker) std::fprintf(stderr, "hpcml-similarity: error: %s\n", e.what());
        return 1;
    }
}
