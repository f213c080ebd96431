// hpcml-similarity's command line: what the user asked for, checked, with the help text.
#pragma once

#include <hpcml/similarity.hpp>

#include <cstddef>
#include <cstdio>
#include <string>

namespace hpcml::tools {

// The exit status of a command line that cannot run as given (a usage error); 1 is a failure.
constexpr int kUsageError = 2;

// A failure to report and the exit code to end with; code 0 is --help.
struct Exit {
    int code;
    std::string message;
};

// The message of the exception in flight (an Exit's, or what() of any other).
std::string current_message();

struct Config {
    std::string input, y_input, output;
    // Parsed once, here: mode, threshold, output type (resolved, never Default), backend (as
    // asked: Auto until the ranks choose), tile.
    SimilarityOptions similarity;
    std::size_t tile = 1000;
    bool pairs = false;         // --pairs: the pairs that pass, not S (similarity.output: Int32 or Bitmask)
    std::size_t min_count = 1;  // --min-count: a pair of mode count passes with at least this count
    bool quiet = false, restart = false;
    long stop_after = -1;  // test hook: exit after this many blocks (as a crash would)
    long delay_ms = 0;     // test hook: sleep after each block, so that a test can kill a run midway
    std::size_t block_bytes = std::size_t{256} << 20;  // the most output bytes of one block (tests lower it)
};

// Throws Exit{0} after printing the help for --help, Exit{2, message} (a usage error) for a bad
// command line.
Config parse_command_line(int argc, char** argv);

void print_usage(std::FILE* out);

}  // namespace hpcml::tools
