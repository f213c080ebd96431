#include "command_line.hpp"

#include <hpcml/device.hpp>
#include <hpcml/similarity.hpp>

#include "cli/flags.hpp"
#include "cluster.hpp"

namespace hpcml::tools {

namespace {

// "int32 (count default), uint16, uint8, bool (all default), bitmask", from the library's tables.
std::string dtype_help() {
    std::string help;
    for (const std::string_view name : similarity_output_names()) {
        help += (help.empty() ? "" : ", ") + std::string(name);
        for (const std::string_view mode : similarity_mode_names()) {
            SimilarityOptions o;
            o.mode = parse_similarity_mode(mode);
            if (to_string(resolve_output(o)) == name) help += " (" + std::string(mode) + " default)";
        }
    }
    return help;
}

cli::Flags declare() {
    cli::Flags flags;
    flags.add("y", "", "y's features (default: y = x)", "Y.npy");
    flags.add("output", "", "the output .npy (required)", "OUT.npy");
    flags.add("mode", "count", cli::one_of(similarity_mode_names(), " or "), "M");
    flags.add("threshold", "1", "finite, >= 0", "t");
    flags.add("tile", "1000", "output tile edge; work goes in blocks of this many rows", "N");
    flags.add("dtype", "", dtype_help(), "D");
    flags.add("backend", "auto", cli::one_of(backend_names()), "B");
    flags.add("method", "auto", cli::one_of(method_names()) + "; auto picks fused or sorted by shape and mode",
              "M");
    flags.add_switch("pairs", "write the pairs that pass as rows (i, j[, count]) of int64, not S");
    flags.add("min-count", "1", "with --pairs in mode count: the count a pair needs", "N");
    flags.add_switch("quiet", "no progress line on stderr");
    flags.add_switch("version", "print the version and whether MPI and CUDA are built in");
    flags.add_switch("restart", "ignore and replace an existing journal and output");
    flags.add("stop-after", "-1", "testing: exit with status 3 after N blocks, as a crash would", "N");
    flags.add("delay-ms", "0", "testing: sleep MS after each block", "MS");
    flags.add("block-bytes", "268435456",
              "testing: the most output bytes per block (a band of --tile rows splits beyond)", "B");
    return flags;
}

}  // namespace

void print_usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: hpcml-similarity INPUT.npy [--y Y.npy] --output OUT.npy [--mode %s]\n"
                 "                        [--threshold t] [--tile 1000] [--dtype %s]\n"
                 "                        [--backend %s] [--method %s]\n"
                 "                        [--pairs [--min-count N]] [--quiet] [--restart]\n"
                 "       hpcml-similarity --version      (says whether MPI and CUDA are built in)\n"
                 "\n"
                 "S[i,j] = #{s : |x[s,i] - y[s,j]| < t} (count) or every sample within t (all), for x in\n"
                 "INPUT.npy, shape (samples, features); y = x unless --y. OUT.npy opens with\n"
                 "np.load(OUT, mmap_mode='r'); bitmask output has shape (n, ceil(m / 8)), rows packed as\n"
                 "np.packbits(S, axis=1, bitorder='little'). Inputs: float32 C order is read as is; Fortran\n"
                 "order is transposed and other real dtypes converted to float32.\n"
                 "\n"
                 "--pairs writes, instead of S, the pairs that pass: an int64 array of rows (i, j) where\n"
                 "every sample is within t (all), or (i, j, count) with count >= --min-count (count), in\n"
                 "row-major order (np.nonzero's). Memory grows with the pairs, not with n x m.\n"
                 "\n"
                 "Work goes in blocks of --tile rows, written to OUT.npy.partial, which becomes OUT.npy\n"
                 "when every block is in it. Resumable: finished blocks are journaled (with checksums) in\n"
                 "OUT.npy.journal/; rerunning the same command computes only the missing ones; --restart\n"
                 "starts over. One job at a time writes an output (a lock on OUT.npy.lock). An output whose\n"
                 "files would overwrite or delete an input is refused.\n"
                 "\n"
                 "Under mpirun -np R each rank takes a GPU (local rank modulo the visible devices; the CPU\n"
                 "where there is none) and blocks are handed out dynamically. On a GPU, x and y are copied\n"
                 "to the device once per rank and each block is computed there.\n"
                 "\n",
                 cli::one_of(similarity_mode_names()).c_str(), cli::one_of(similarity_output_names()).c_str(),
                 cli::one_of(backend_names()).c_str(), cli::one_of(method_names()).c_str());
    declare().print(out);
}

Config parse_command_line(int argc, char** argv) {
    cli::Flags flags = declare();
    Config c;
    try {
        flags.parse(argc, argv);
        if (flags.help_requested()) {
            print_usage(stdout);
            throw Exit{0, ""};
        }
        if (flags.on("version")) {
            std::printf("hpcml-similarity %s\nparallel: %s\nCUDA: %s\n", std::string(version()).c_str(),
                        mpi_description().c_str(), cuda_compiled() ? "built in" : "not built in (CPU only)");
            throw Exit{0, ""};
        }
        const auto& positionals = flags.positionals();
        if (positionals.size() > 1)
            throw Exit{kUsageError, "unexpected argument '" + positionals[1] + "' (one INPUT.npy; y goes with --y)"};
        if (positionals.empty()) throw Exit{kUsageError, "INPUT.npy: missing"};
        c.input = positionals[0];
        c.y_input = flags.str("y");
        c.output = flags.str("output");
        SimilarityOptions& o = c.similarity;
        o.mode = parse_similarity_mode(flags.str("mode"), "--mode");
        o.threshold = static_cast<float>(flags.real("threshold"));
        c.tile = static_cast<std::size_t>(flags.integer("tile", 1));
        o.tile = c.tile;
        o.output = resolve_output(
            {.mode = o.mode,
             .output = parse_similarity_output(flags.given("dtype") ? flags.str("dtype") : "default", "--dtype")});
        c.pairs = flags.on("pairs");
        c.min_count = static_cast<std::size_t>(flags.integer("min-count", 1));
        if (flags.given("min-count") && !(c.pairs && o.mode == SimilarityMode::Count))
            throw Exit{kUsageError, "--min-count: goes with --pairs in mode count"};
        if (c.pairs && flags.given("dtype"))
            throw Exit{kUsageError, "--dtype: --pairs writes int64 pairs, not S; leave --dtype out"};
        // With --pairs the output type only sizes the blocks (the library reduces them to pairs),
        // as Int32 counts or a bitmask.
        if (c.pairs) o.output = o.mode == SimilarityMode::Count ? SimilarityOutput::Int32 : SimilarityOutput::Bitmask;
        o.backend = parse_backend(flags.str("backend"), "--backend");
        o.method = parse_method(flags.str("method"), "--method");
        c.quiet = flags.on("quiet");
        c.restart = flags.on("restart");
        c.stop_after = static_cast<long>(flags.integer("stop-after", -1));
        c.delay_ms = static_cast<long>(flags.integer("delay-ms", 0));
        c.block_bytes = static_cast<std::size_t>(flags.integer("block-bytes", 1));
    } catch (const Error& e) {
        throw Exit{kUsageError, e.what()};
    }
    if (c.output.empty()) throw Exit{kUsageError, "--output: missing"};
    return c;
}

std::string current_message() {
    try {
        throw;
    } catch (const Exit& e) {
        return e.message;
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

}  // namespace hpcml::tools
