// The journal that makes hpcml-similarity resumable: OUT.npy.journal/ holds the command that
// wrote OUT.npy (its fingerprint) and, per process, the blocks whose bytes are in the file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "npy.hpp"

namespace hpcml::tools {

// What a journal must agree with before a rerun may reuse it: the inputs (path, size, mtime,
// shape) and every option that changes the output's bytes or its blocks.
std::string fingerprint(const Config& c, const Matrix& x, const Matrix* y);

class Journal {
public:
    explicit Journal(const std::string& output);
    ~Journal();
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Rank 0, before any block: resumes when the journal was written by the same command and
    // the output has the expected size and header (done[k] = 1 for each finished block);
    // otherwise (or with --restart) starts over: the output is created with its header and
    // full size, the journal with the fingerprint. Throws Exit (or a filesystem_error).
    void open_or_start(const Config& c, const std::string& print, const std::string& header, std::size_t total_bytes,
                       std::vector<char>& done) const;

    // Every rank: a log of its own, to which record(k) appends block k once its bytes are written.
    void open_log(int rank);
    void record(std::size_t block);
    void close_log();

    // The run is complete: the journal has done its job.
    void remove() const;

    const std::filesystem::path& dir() const { return dir_; }

private:
    std::filesystem::path dir_;
    std::FILE* log_ = nullptr;
};

}  // namespace hpcml::tools
