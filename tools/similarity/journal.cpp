#include "journal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace hpcml::tools {

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
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
void read_logs(const fs::path& journal, std::vector<char>& done) {
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

}  // namespace

std::string fingerprint(const Config& c, const Matrix& x, const Matrix* y) {
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

Journal::Journal(const std::string& output) : dir_(output + ".journal") {}

Journal::~Journal() { close_log(); }

void Journal::open_or_start(const Config& c, const std::string& print, const std::string& header, std::size_t total_bytes,
                            std::vector<char>& done) const {
    bool resume = false;
    if (fs::exists(dir_ / "command") && !c.restart) {
        if (read_text(dir_ / "command") != print)
            throw Exit{1, "--output: the journal " + dir_.string() + " was written by a different command or input; "
                          "rerun the same command to resume, or add --restart to start over"};
        resume = fs::exists(c.output) && fs::file_size(c.output) == total_bytes && read_prefix(c.output, header.size()) == header;
        if (!resume && !c.quiet)
            std::fprintf(stderr, "hpcml-similarity: %s is missing or not the journal's output (size or header); starting over\n",
                         c.output.c_str());
    }
    if (resume) {
        read_logs(dir_, done);
        return;
    }
    std::error_code ignore;
    fs::remove_all(dir_, ignore);
    std::ofstream out(c.output, std::ios::binary | std::ios::trunc);
    if (!out) throw Exit{1, "--output: cannot write '" + c.output + "'"};
    out << header;
    out.close();
    if (!out) throw Exit{1, "--output: cannot write '" + c.output + "'"};
    fs::resize_file(c.output, total_bytes);
    fs::create_directories(dir_);
    std::ofstream command(dir_ / "command");
    command << print;
    command.close();
    if (!command) throw Exit{1, "--output: cannot write the journal in " + dir_.string()};
}

void Journal::open_log(int rank) {
    // The pid too: a rerun's rank 0 must not append to a crashed run's half-written last line.
    log_ = std::fopen((dir_ / ("rank-" + std::to_string(rank) + "-" + std::to_string(getpid()))).c_str(), "a");
    if (!log_) throw Exit{1, "--output: cannot write the journal in " + dir_.string()};
}

void Journal::record(std::size_t block) {
    std::fprintf(log_, "%zu\n", block);
    if (std::fflush(log_) != 0) throw Exit{1, "--output: cannot write the journal in " + dir_.string()};
}

void Journal::close_log() {
    if (log_) std::fclose(log_);
    log_ = nullptr;
}

void Journal::remove() const {
    std::error_code ignore;
    fs::remove_all(dir_, ignore);
}

}  // namespace hpcml::tools
