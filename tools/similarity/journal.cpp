#include "journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "cluster.hpp"

namespace fs = std::filesystem;

namespace hpcml::tools {

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
    throw Exit{1, "--output: " + what + " '" + path + "': " + std::strerror(errno)};
}

}  // namespace

std::uint64_t checksum(const void* data, std::size_t bytes, std::uint64_t state) {
    // FNV-1a over 8-byte words (a byte at a time ran at 1 GB/s: seconds for a 9 GB output),
    // with the high half folded down after each multiply (which moves bits up only), then
    // over the bytes left.
    const auto* p = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        std::uint64_t word;
        std::memcpy(&word, p + i, sizeof word);
        state = (state ^ word) * 1099511628211ull;
        state ^= state >> 32;
    }
    for (; i < bytes; ++i) state = (state ^ p[i]) * 1099511628211ull;
    return state;
}

std::uint64_t block_seed(std::uint64_t nonce, std::size_t k, const Block& b) {
    const std::uint64_t identity[] = {nonce, k, b.r0, b.c0, b.rows, b.cols};
    return checksum(identity, sizeof identity);
}

void read_claims(std::string_view log, std::size_t blocks, std::map<std::size_t, std::uint64_t>& claims) {
    for (std::size_t start = 0, eol; (eol = log.find('\n', start)) != std::string_view::npos; start = eol + 1) {
        const std::string line(log.substr(start, eol - start));
        unsigned long long block = 0, sum = 0;
        int used = 0;
        // "block checksum": decimal, one space, 16 hex digits, nothing else.
        if (line.size() < 18 || line[0] < '0' || line[0] > '9') continue;
        if (std::sscanf(line.c_str(), "%llu %16llx%n", &block, &sum, &used) != 2 ||
            static_cast<std::size_t>(used) != line.size())
            continue;
        if (line.compare(line.size() - 17, 1, " ") != 0 || block >= blocks) continue;
        claims[static_cast<std::size_t>(block)] = sum;
    }
}

std::string fingerprint(const Config& c, const Matrix& x, const Matrix* y) {
    std::ostringstream f;
    auto file = [&](const std::string& path) {
        struct stat st {};
        stat(path.c_str(), &st);
        f << fs::absolute(path).string() << " bytes=" << st.st_size << " mtime=" << st.st_mtim.tv_sec << "."
          << st.st_mtim.tv_nsec;
    };
    f << "hpcml-similarity 3\nx ";
    file(c.input);
    f << " shape=" << x.rows << "x" << x.cols << "\ny ";
    if (y) {
        file(c.y_input);
        f << " shape=" << y->rows << "x" << y->cols;
    } else {
        f << "= x";
    }
    char threshold[32];
    std::snprintf(threshold, sizeof threshold, "%.9g", c.similarity.threshold);
    f << "\nmode=" << to_string(c.similarity.mode) << " threshold=" << threshold << " tile=" << c.tile
      << " dtype=" << to_string(c.similarity.output) << "\n";
    if (c.pairs) f << "pairs min_count=" << c.min_count << "\n";
    f << "block_bytes=" << c.block_bytes << "\n";
    return f.str();
}

namespace {
constexpr const char* kPartial = ".partial";
constexpr const char* kLock = ".lock";
constexpr const char* kJournal = ".journal";
}  // namespace

void refuse_output_over_inputs(const Config& c) {
    const std::pair<std::string, std::string> inputs[] = {{"INPUT.npy", c.input}, {"--y", c.y_input}};
    const std::pair<std::string, std::string> outputs[] = {{"", c.output},
                                                           {"its partial file ", c.output + kPartial},
                                                           {"its lock ", c.output + kLock},
                                                           {"its journal ", c.output + kJournal}};
    for (const auto& [role, input] : inputs) {
        if (input.empty()) continue;
        std::error_code error;
        // Through every link; an input that cannot be resolved is left to reading it, which says why.
        const fs::path resolved = fs::canonical(input, error);
        if (error) continue;
        for (const auto& [what, path] : outputs) {
            // The same file (fs::equivalent: the same device and inode, so hard links too), or,
            // for the journal (a folder the run deletes at the end), a file inside it.
            bool over = fs::equivalent(path, input, error);
            if (!over && what == "its journal ") {
                const fs::path journal = fs::canonical(path, error);
                const fs::path inside = error ? fs::path{} : resolved.lexically_relative(journal);
                over = !inside.empty() && *inside.begin() != "..";
            }
            if (over)
                throw Exit{kUsageError, "--output: " + what + "'" + path + "' is " + role + " ('" + input +
                                            "'): the run would overwrite or delete it; choose another output"};
        }
    }
}

Journal::Journal(const std::string& output)
    : output_(output), partial_(output + kPartial), lock_path_(output + kLock), dir_(output + kJournal) {}

Journal::~Journal() {
    close_log();
    if (fd_ >= 0) close(fd_);
    if (lock_fd_ >= 0) close(lock_fd_);  // releases the lock
}

void Journal::lock() {
    lock_fd_ = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0)  // the first file the run makes: the error names the user's path
        throw Exit{1, "--output: cannot write '" + output_ + "': " + std::strerror(errno) + " (creating its lock '" +
                          lock_path_ + "')"};
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            throw Exit{
                1, "--output: another hpcml-similarity is writing '" + output_ + "' (it holds '" + lock_path_ + "')"};
        fail("cannot lock", lock_path_);
    }
    // The file locked must still be the one at that path: a job that finished meanwhile
    // removed it (and a third job may have made a new one).
    struct stat locked {
    }, named{};
    if (fstat(lock_fd_, &locked) != 0 || stat(lock_path_.c_str(), &named) != 0 || locked.st_ino != named.st_ino ||
        locked.st_dev != named.st_dev)
        throw Exit{1, "--output: another hpcml-similarity finished '" + output_ +
                          "' while this one started; rerun to redo it"};
    fd_ = open(partial_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create", partial_);
}

std::map<std::size_t, std::uint64_t> Journal::open_or_start(const Config& c, const std::string& print,
                                                            const std::string& header, std::size_t total_bytes,
                                                            std::size_t blocks) {
    std::map<std::size_t, std::uint64_t> claims;
    if (fs::exists(dir_ / "command") && !c.restart) {
        if (read_text(dir_ / "command") != print)
            throw Exit{1, "--output: the journal " + dir_.string() +
                              " was written by a different command or input; "
                              "rerun the same command to resume, or add --restart to start over"};
        std::string head(header.size(), '\0');
        const std::string nonce = read_text(dir_ / "nonce");
        char* end = nullptr;
        nonce_ = std::strtoull(nonce.c_str(), &end, 16);
        // With --pairs (no header) the parts are the journal's data: a gathering cut short
        // leaves the partial file to be written again, never a reason to start over.
        const bool pairs = header.empty();
        const bool resume =
            nonce.size() == 16 && *end == '\0' &&
            (pairs || (fs::file_size(partial_) == total_bytes &&
                       pread(fd_, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()) && head == header));
        if (resume) {
            if (pairs && ftruncate(fd_, 0) != 0) fail("cannot write", partial_);
            for (const auto& entry : fs::directory_iterator(dir_))
                if (entry.path().filename().string().rfind("rank-", 0) == 0)
                    read_claims(read_text(entry.path()), blocks, claims);
            return claims;
        }
        if (!c.quiet)
            std::fprintf(
                stderr,
                "hpcml-similarity: %s is missing or not the journal's output (size, header or nonce); starting over\n",
                partial_.c_str());
    }
    // A stale log that survived here could vouch for blocks of the new file: removal must work.
    fs::remove_all(dir_);
    if (ftruncate(fd_, 0) != 0) fail("cannot write", partial_);
    if (!write_fully(fd_, header.data(), header.size(), 0)) fail("cannot write", partial_);
    if (ftruncate(fd_, static_cast<off_t>(total_bytes)) != 0) fail("cannot size", partial_);
    fs::create_directories(dir_);
    std::random_device entropy;
    nonce_ = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^ static_cast<std::uint64_t>(getpid());
    char nonce[17];
    std::snprintf(nonce, sizeof nonce, "%016" PRIx64, nonce_);
    // The command last, written whole then renamed into place: a journal with a command is complete.
    for (const auto& [name, text] : {std::pair<std::string, std::string>{"nonce", nonce}, {"command", print}}) {
        const fs::path tmp = dir_ / (name + ".tmp");
        const int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0) fail("cannot write the journal in", dir_.string());
        const bool ok = write_fully(out, text.data(), text.size(), 0) && fsync(out) == 0;
        close(out);
        if (!ok || std::rename(tmp.c_str(), (dir_ / name).c_str()) != 0)
            fail("cannot write the journal in", dir_.string());
    }
    return claims;
}

std::string Journal::part(std::size_t block) const { return (dir_ / ("pairs-" + std::to_string(block))).string(); }

void Journal::open_log(int rank) {
    // A file of its own (O_EXCL): a line of this run can never join a crashed run's cut line.
    std::random_device entropy;
    const std::string name =
        "rank-" + std::to_string(rank) + "-" + std::to_string(getpid()) + "-" + std::to_string(entropy());
    const int out = open((dir_ / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0 || !(log_ = fdopen(out, "a"))) throw Exit{1, "--output: cannot write the journal in " + dir_.string()};
}

void Journal::record(std::size_t block, std::uint64_t block_checksum) {
    std::fprintf(log_, "%zu %016" PRIx64 "\n", block, block_checksum);
    if (std::fflush(log_) != 0) throw Exit{1, "--output: cannot write the journal in " + dir_.string()};
}

void Journal::close_log() {
    if (log_) std::fclose(log_);
    log_ = nullptr;
}

void Journal::finish() {
    // The data reach the disk before the name says they are complete, and the name before the
    // journal goes.
    if (fsync(fd_) != 0) fail("cannot flush", partial_);
    if (std::rename(partial_.c_str(), output_.c_str()) != 0) fail("cannot rename to the output", partial_);
    const std::string parent = fs::absolute(output_).parent_path().string();
    if (const int dir = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
        (void)fsync(dir);
        close(dir);
    }
    std::error_code ignore;
    fs::remove_all(dir_, ignore);
    unlink(lock_path_.c_str());  // while still held: a job waiting on it sees it gone (lock())
}

}  // namespace hpcml::tools
