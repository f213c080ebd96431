// The processes of one hpcml-similarity job: under mpirun the MPI world (ranks, a shared block
// counter, one output file written by all), otherwise a world of one with the same interface.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#if HPCML_WITH_MPI
#include <mpi.h>
#endif

namespace hpcml::tools {

// How this build runs several processes: "MPI x.y (library version)" or that it has no MPI.
std::string mpi_description();

// The number of processes an MPI launcher started beside this one, read from the variables
// the common launchers set (Open MPI, MPICH/Hydra and Intel MPI, MVAPICH); 1 where none did.
int launcher_ranks();

class World {
public:
    // Without MPI, refuses (Exit) to run as one of several ranks a launcher started: each would
    // compute the whole job alone and all would race for one output.
    World(int& argc, char**& argv);
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    void barrier() const;
    int broadcast(int value) const;                  // rank 0's value, on every rank
    void broadcast(std::vector<char>& bytes) const;  // the same size on every rank
    // The lowest rank that failed (each rank knows only about itself), or -1 where none did.
    int first_failure(bool failed) const;
    [[noreturn]] void abort_now(int code) const;

    int rank = 0, size = 1, local_rank = 0, local_size = 1;
    int speaker = 0;  // the rank that reports errors (rank 0, unless another failed alone)
};

// Hands out block numbers 0, 1, 2, ... across all ranks (an MPI one-sided counter on rank 0).
class Counter {
public:
    explicit Counter(const World& world);
    ~Counter();
    Counter(const Counter&) = delete;
    Counter& operator=(const Counter&) = delete;
    long long next();

private:
#if HPCML_WITH_MPI
    MPI_Win window_;
    long long* base_ = nullptr;
#else
    long long value_ = 0;
#endif
};

// Writes all `bytes` at `offset` of file descriptor `fd` (pwrite, again after EINTR or a short
// write); false, with errno set, where the system refuses.
bool write_fully(int fd, const void* data, std::size_t bytes, std::size_t offset);

// Writes byte ranges of the output file: MPI-IO under mpirun with several ranks (it keeps
// ranks on other machines consistent on shared file systems), pwrite otherwise. Throws Exit.
class OutputFile {
public:
    OutputFile(const std::string& path, const World& world);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;
    void write_at(std::size_t offset, const void* data, std::size_t bytes);
    // Flushes and closes (collective under MPI): the error a file system reports only then
    // (quota, a full network disk), or "" when the bytes are safe.
    std::string close();

private:
#if HPCML_WITH_MPI
    MPI_File file_;
    bool mpi_ = false;
#endif
    int fd_ = -1;
};

}  // namespace hpcml::tools
