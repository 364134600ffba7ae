// `spconv bench` output: the figures of tools/bench_measure as a table per matrix, a suite
// summary, JSON and CSV. Every derived figure (GFLOP/s, effective GB/s, speedup, conversion
// cost, break-even, footprint, ...) is computed once, in one flat record per (matrix,
// device, format) that the tables, the JSON "results" and the CSV rows all print, so the
// three always agree and the CSV columns are the JSON record's keys in the same order.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tools/bench_measure.hpp"

namespace spconv::bench {

struct report {
  machine_info machine;
  settings config;
  std::vector<matrix_figures> matrices;
  std::vector<std::pair<std::string, std::string>> skipped;  // file, why
};

std::string header_text(const report& r);               // machine and settings, a few lines
std::string matrix_text(const matrix_figures& m);       // the tables of one matrix
std::string summary_text(const report& r);              // per device: geometric means, best, losers
std::string json_text(const report& r);                 // everything, pretty-printed
std::string csv_text(const report& r);                  // header + one row per (matrix, device, format)

}  // namespace spconv::bench
