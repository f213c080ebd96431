#include "pairs.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

#include "cluster.hpp"
#include "command_line.hpp"
#include "npy.hpp"

namespace hpcml::tools {

void append_mirror_pairs(const Block& block, std::size_t width, std::vector<std::int64_t>& pairs) {
    const auto first_mirrored = static_cast<std::int64_t>(block.r0 + block.rows);
    const std::size_t own = pairs.size();
    for (std::size_t k = 0; k < own; k += width) {
        const std::int64_t i = pairs[k], j = pairs[k + 1], count = width == 3 ? pairs[k + 2] : 0;
        if (j < first_mirrored) continue;  // in the block's diagonal square: computed, not mirrored
        pairs.insert(pairs.end(), {j, i});
        if (width == 3) pairs.push_back(count);
    }
}

void write_part(const std::string& path, const std::vector<std::int64_t>& pairs) {
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_fully(fd, pairs.data(), pairs.size() * sizeof(std::int64_t), 0);
    const int error = errno;
    if (fd >= 0) ok = close(fd) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        unlink(tmp.c_str());
        throw Exit{
            1, "--output: cannot write the pairs of a block to '" + path + "': " + std::strerror(ok ? errno : error)};
    }
}

bool read_part(const std::string& path, std::vector<std::int64_t>& pairs) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return false;
    const std::streamoff bytes = in.tellg();
    if (bytes < 0 || bytes % static_cast<std::streamoff>(sizeof(std::int64_t)) != 0) return false;
    pairs.resize(static_cast<std::size_t>(bytes) / sizeof(std::int64_t));
    in.seekg(0);
    return static_cast<bool>(in.read(reinterpret_cast<char*>(pairs.data()), bytes));
}

namespace {

// The parts' rows of Width int64, sorted in place where needed, written after the header.
template <std::size_t Width>
std::size_t write_rows(int fd, const std::vector<std::string>& parts, const std::string& path) {
    std::size_t total = 0;
    for (const std::string& name : parts) {
        std::error_code error;
        total += static_cast<std::size_t>(std::filesystem::file_size(name, error)) / (Width * sizeof(std::int64_t));
    }
    std::vector<std::array<std::int64_t, Width>> rows;
    rows.reserve(total);
    std::vector<std::int64_t> part;
    for (const std::string& name : parts) {
        if (!read_part(name, part) || part.size() % Width != 0)
            throw Exit{1, "--output: cannot read the pairs of a block from '" + name + "'"};
        for (std::size_t k = 0; k < part.size(); k += Width) {
            std::array<std::int64_t, Width> row;
            std::copy_n(part.begin() + static_cast<std::ptrdiff_t>(k), Width, row.begin());
            rows.push_back(row);
        }
    }
    // Blocks split by columns, and mirrors, come out of row-major order.
    auto before = [](const auto& a, const auto& b) { return a[0] != b[0] ? a[0] < b[0] : a[1] < b[1]; };
    if (!std::is_sorted(rows.begin(), rows.end(), before)) std::sort(rows.begin(), rows.end(), before);
    const std::string header = npy_header("<i8", rows.size(), Width);
    if (ftruncate(fd, 0) != 0 || !write_fully(fd, header.data(), header.size(), 0) ||
        !write_fully(fd, rows.data(), rows.size() * sizeof rows[0], header.size()))
        throw Exit{1, "--output: cannot write '" + path + "': " + std::strerror(errno)};
    return rows.size();
}

}  // namespace

std::size_t write_pairs_npy(int fd, const std::vector<std::string>& parts, std::size_t width, const std::string& path) {
    return width == 3 ? write_rows<3>(fd, parts, path) : write_rows<2>(fd, parts, path);
}

}  // namespace hpcml::tools
