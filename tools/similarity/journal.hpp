// The files of one hpcml-similarity run and what makes it resumable. While the run lasts, the
// output is OUT.npy.partial; OUT.npy.lock, held by rank 0 from the start to the end, keeps two
// jobs off one output; OUT.npy.journal/ holds the command that wrote the partial file (its
// fingerprint), a nonce, and per process a log of lines "block checksum", one per block whose
// bytes are in the file. A block's checksum starts from the nonce and the block's number and
// place, so a line can vouch only for its own block of this journal. A finished run renames the
// partial file to OUT.npy and removes the journal: OUT.npy exists only when it is complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "blocks.hpp"
#include "command_line.hpp"
#include "npy.hpp"

namespace hpcml::tools {

// What a journal must agree with before a rerun may reuse it: the inputs (path, size, mtime,
// shape) and every option that changes the output's bytes or its blocks.
std::string fingerprint(const Config& c, const Matrix& x, const Matrix* y);

// FNV-1a over 64-bit words, 64 bits: the checksum a journal line gives for a block's bytes.
std::uint64_t checksum(const void* data, std::size_t bytes, std::uint64_t state = 14695981039346656037ull);

// Where a block's checksum starts: from the journal's nonce and the block's number and place,
// so that a line vouches only for its own block of its own journal.
std::uint64_t block_seed(std::uint64_t nonce, std::size_t k, const Block& b);

// The blocks a journal's logs claim, with their checksums. Only whole, well-formed lines with a
// block below `blocks` count: a line cut short by a crash could name another block ("12" of
// "123"), and a damaged one anything.
void read_claims(std::string_view log, std::size_t blocks, std::map<std::size_t, std::uint64_t>& claims);

// Refuses (Exit naming --output) an output whose file, partial file, lock or journal would be
// an input (INPUT.npy, --y) or hold one, however the paths reach it (relative or absolute,
// symbolic or hard links): the run would overwrite or delete that input.
void refuse_output_over_inputs(const Config& c);

class Journal {
public:
    explicit Journal(const std::string& output);
    ~Journal();
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Rank 0, first: takes OUT.npy.lock (created if absent) and opens the partial output, or
    // throws Exit when another job holds the lock.
    void lock();

    // Rank 0, under the lock: resumes when the journal was written by the same command and the
    // partial output has the expected size and header (with --pairs, header "": any partial
    // output, emptied), returning the blocks its logs claim;
    // otherwise (or with --restart) starts over (the partial output sized and headed, a new
    // journal with the fingerprint and a fresh nonce) and returns none. Throws Exit (or a
    // filesystem_error).
    std::map<std::size_t, std::uint64_t> open_or_start(const Config& c, const std::string& print,
                                                       const std::string& header, std::size_t total_bytes,
                                                       std::size_t blocks);

    // This journal's nonce: rank 0's after open_or_start; the other ranks are given it.
    std::uint64_t nonce() const { return nonce_; }
    void set_nonce(std::uint64_t nonce) { nonce_ = nonce; }

    // Every rank: a log of its own (a new file), to which record() appends a block once its
    // bytes are written.
    void open_log(int rank);
    void record(std::size_t block, std::uint64_t block_checksum);
    void close_log();

    // Rank 0, once every block is written and flushed: OUT.npy.partial becomes OUT.npy, the
    // journal and the lock file go.
    void finish();

    // With --pairs: the file of a block's pairs, in the journal (pairs.hpp).
    std::string part(std::size_t block) const;

    const std::string& partial() const { return partial_; }
    int partial_fd() const { return fd_; }  // rank 0's descriptor of the partial output

private:
    std::string output_, partial_, lock_path_;
    std::filesystem::path dir_;
    int fd_ = -1, lock_fd_ = -1;
    std::uint64_t nonce_ = 0;
    std::FILE* log_ = nullptr;
};

}  // namespace hpcml::tools
