#include "cluster.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "command_line.hpp"

namespace hpcml::tools {

std::string mpi_description() {
#if HPCML_WITH_MPI
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(library, &length);  // callable before MPI_Init
    std::string name(library, static_cast<std::size_t>(std::max(length, 0)));
    name = name.substr(0, name.find_first_of(",\n"));
    return "MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION) + " (" + name + ")";
#else
    return "no MPI (a single process: built with -DHPCML_WITH_MPI=OFF or without an MPI library)";
#endif
}

int launcher_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"}) {
        const char* value = std::getenv(name);
        if (!value) continue;
        char* end = nullptr;
        const long size = std::strtol(value, &end, 10);
        if (end != value && *end == '\0' && size > 1) return static_cast<int>(std::min<long>(size, INT_MAX));
    }
    return 1;
}

World::World(int& argc, char**& argv) {
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
    if (const int ranks = launcher_ranks(); ranks > 1)
        throw Exit{
            1, "started as one of " + std::to_string(ranks) +
                   " ranks by an MPI launcher, but this hpcml-similarity has " + mpi_description() +
                   ": each rank would compute the whole job and all would race for one output. "
                   "Run it without mpirun, or use a build with MPI (hpcml-similarity --version says which this is)"};
#endif
}

World::~World() {
#if HPCML_WITH_MPI
    MPI_Finalize();
#endif
}

void World::barrier() const {
#if HPCML_WITH_MPI
    MPI_Barrier(MPI_COMM_WORLD);
#endif
}

int World::broadcast(int value) const {
#if HPCML_WITH_MPI
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    return value;
}

void World::broadcast(std::vector<char>& bytes) const {
#if HPCML_WITH_MPI
    for (std::size_t k = 0; k < bytes.size(); k += INT_MAX)
        MPI_Bcast(bytes.data() + k, static_cast<int>(std::min<std::size_t>(bytes.size() - k, INT_MAX)), MPI_CHAR, 0,
                  MPI_COMM_WORLD);
#else
    (void)bytes;
#endif
}

int World::first_failure(bool failed) const {
#if HPCML_WITH_MPI
    int mine = failed ? rank : size, lowest = size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return lowest < size ? lowest : -1;
#else
    return failed ? 0 : -1;
#endif
}

void World::abort_now(int code) const {
#if HPCML_WITH_MPI
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::_Exit(code);
}

Counter::Counter(const World& world) {
#if HPCML_WITH_MPI
    MPI_Win_allocate(world.rank == 0 ? sizeof(long long) : 0, sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &base_,
                     &window_);
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

Counter::~Counter() {
#if HPCML_WITH_MPI
    MPI_Win_free(&window_);
#endif
}

long long Counter::next() {
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

OutputFile::OutputFile(const std::string& path, const World& world) {
#if HPCML_WITH_MPI
    if (world.size > 1) {
        if (MPI_File_open(MPI_COMM_WORLD, path.c_str(), MPI_MODE_WRONLY, MPI_INFO_NULL, &file_) != MPI_SUCCESS)
            throw Exit{1, "--output: cannot open '" + path + "' for writing"};
        mpi_ = true;
        return;
    }
#else
    (void)world;
#endif
    fd_ = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) throw Exit{1, "--output: cannot open '" + path + "': " + std::strerror(errno)};
}

OutputFile::~OutputFile() {
#if HPCML_WITH_MPI
    if (mpi_) MPI_File_close(&file_);
#endif
    if (fd_ >= 0) ::close(fd_);
}

std::string OutputFile::close() {
#if HPCML_WITH_MPI
    if (mpi_) {
        mpi_ = false;
        const bool synced = MPI_File_sync(file_) == MPI_SUCCESS;
        const bool closed = MPI_File_close(&file_) == MPI_SUCCESS;
        return synced && closed
                   ? ""
                   : "--output: flushing the output failed (MPI_File_sync / MPI_File_close); is the disk full?";
    }
#endif
    std::string error;
    if (fsync(fd_) != 0) error = std::string("--output: flushing the output failed: ") + std::strerror(errno);
    if (::close(fd_) != 0 && error.empty())
        error = std::string("--output: closing the output failed: ") + std::strerror(errno);
    fd_ = -1;
    return error;
}

void OutputFile::write_at(std::size_t offset, const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
#if HPCML_WITH_MPI
    // MPI counts are ints: a block over 2 GiB (a large --tile) goes in pieces.
    while (mpi_ && bytes > 0) {
        const int piece = static_cast<int>(std::min<std::size_t>(bytes, std::size_t{1} << 30));
        MPI_Status status;
        int written = 0;
        // Open MPI reports a full disk in the count, not always in the return code.
        if (MPI_File_write_at(file_, static_cast<MPI_Offset>(offset), p, piece, MPI_BYTE, &status) != MPI_SUCCESS ||
            MPI_Get_count(&status, MPI_BYTE, &written) != MPI_SUCCESS || written != piece)
            throw Exit{1, "--output: write failed (" + std::to_string(written) + " of " + std::to_string(piece) +
                              " bytes written; is the disk full?)"};
        p += piece;
        offset += static_cast<std::size_t>(piece);
        bytes -= static_cast<std::size_t>(piece);
    }
#endif
    if (bytes > 0 && !write_fully(fd_, p, bytes, offset))
        throw Exit{1, std::string("--output: write failed: ") + std::strerror(errno)};
}

bool write_fully(int fd, const void* data, std::size_t bytes, std::size_t offset) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = pwrite(fd, p, bytes, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        p += n;
        offset += static_cast<std::size_t>(n);
        bytes -= static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace hpcml::tools
