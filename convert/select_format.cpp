// The automatic format choice: statistics of the matrix's CSR, then the decision lists of
// specs/select_format.md. Every statistic reuses the rule that defines it: row statistics
// from compute_stats, the value table from ccoo_value_table, HYB's ELL width, CSR5's tile
// size and BCSR's block size from their cpu::resolve_X_params, BCSR's block count from the
// converter.
#include "convert/select_format.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "convert/cpu/bcsr.hpp"
#include "convert/cpu/csr5.hpp"
#include "convert/cpu/hyb.hpp"
#include "convert/graph.hpp"
#include "formats/csr_stats.hpp"
#include "formats/describe.hpp"
#include "formats/parallel.hpp"

namespace spconv {
namespace {

using I = std::int32_t;
using namespace selection;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double share) { return fixed(100.0 * share, share >= 0.999 && share < 1.0 ? 3 : 1) + "%"; }

std::string mib(std::uint64_t bytes) { return fixed(static_cast<double>(bytes) / double(1 << 20), 1) + " MiB"; }

void pick(format_choice& c, std::string_view format, std::string_view step, std::string reason) {
  c.format = format;
  c.step = step;
  c.reason = std::move(reason);
}

// x read once and y written once: the bytes README's copy-bandwidth shares count besides
// the format's arrays (`spconv bench`).
template <class V>
std::uint64_t vector_bytes(const csr<V, I>& a) {
  return sizeof(V) * static_cast<std::uint64_t>(a.rows + a.cols);
}

// Value repetition: CCOO's own table (the min(256, distinct) most frequent values) and the
// share of the entries it covers. Fewer than 256 table values means every value is in it.
template <class V>
void measure_values(const csr<V, I>& a, selection_stats& s) {
  const std::int64_t n = a.nnz();
  const array<V> table = ccoo_value_table(a.values.data(), n, 0);
  s.table_values = static_cast<std::int64_t>(table.size());
  if (table.size() < ccoo_table_capacity) {
    s.table_share = 1.0;
    return;
  }
  using B = ccoo_bits<V>;
  std::vector<B> sorted(table.size());
  std::transform(table.begin(), table.end(), sorted.begin(), [](V v) { return std::bit_cast<B>(v); });
  std::sort(sorted.begin(), sorted.end());
  const int blocks = block_count(n, 1 << 16);
  std::vector<std::int64_t> hits(static_cast<std::size_t>(blocks), 0);
  parallel_blocks(n, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t h = 0;
    for (std::int64_t k = lo; k < hi; ++k) h += std::binary_search(sorted.begin(), sorted.end(), std::bit_cast<B>(a.values[k]));
    hits[static_cast<std::size_t>(b)] = h;
  });
  s.table_share = static_cast<double>(std::accumulate(hits.begin(), hits.end(), std::int64_t{0})) / static_cast<double>(n);
}

// CCOO's column-offset width, estimated over windows of 1024 consecutive entries (the
// automatic 256 x 4 chunk, its row padding aside): 1, 2 or 4 bytes as the window's column
// span fits 8, 16 or 32 bits.
template <class V>
void measure_offsets(const csr<V, I>& a, selection_stats& s) {
  constexpr std::int64_t window = 1024;
  const std::int64_t n = a.nnz(), windows = (n + window - 1) / window;
  const int blocks = block_count(windows, 64);
  std::vector<std::int64_t> sums(static_cast<std::size_t>(blocks), 0);
  parallel_blocks(windows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t sum = 0;
    for (std::int64_t w = lo; w < hi; ++w) {
      const auto [low, high] = std::minmax_element(a.col_idx.begin() + w * window,
                                                   a.col_idx.begin() + std::min(n, (w + 1) * window));
      const std::int64_t span = static_cast<std::int64_t>(*high) - *low;
      sum += span < (1 << 8) ? 1 : span < (1 << 16) ? 2 : 4;
    }
    sums[static_cast<std::size_t>(b)] = sum;
  });
  s.ccoo_offset_bytes = windows > 0 ? static_cast<double>(std::accumulate(sums.begin(), sums.end(), std::int64_t{0})) /
                                          static_cast<double>(windows)
                                    : 1.0;
}

// HYB with the automatic ELL width: rows * width ELL slots (padding included, as its kernel
// and `spconv bench` count them) and the COO tail of the entries beyond the width (row, column,
// value each). Absent when HYB cannot hold the matrix (32-bit slot index).
template <class V>
void estimate_hyb(const csr<V, I>& a, selection_stats& s) {
  hyb_params p;
  try {
    p = cpu::resolve_hyb_params(a, {});
  } catch (const error& e) {
    if (e.code() != errc::unsupported) throw;
    return;
  }
  const std::int64_t w = p.ell_width;
  const int blocks = block_count(a.rows, 1 << 14);
  std::vector<std::int64_t> tails(static_cast<std::size_t>(blocks), 0);
  parallel_blocks(a.rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t t = 0;
    for (std::int64_t r = lo; r < hi; ++r) t += std::max<std::int64_t>(0, a.row_ptr[r + 1] - a.row_ptr[r] - w);
    tails[static_cast<std::size_t>(b)] = t;
  });
  const std::int64_t tail = std::accumulate(tails.begin(), tails.end(), std::int64_t{0});
  s.hyb_ell_width = w;
  s.hyb_tail = tail;
  s.hyb_bytes = static_cast<std::uint64_t>(a.rows * w) * (sizeof(V) + sizeof(I)) +
                static_cast<std::uint64_t>(tail) * (sizeof(V) + 2 * sizeof(I)) + vector_bytes(a);
}

// CSR5 with the GPU tile size: CSR's arrays plus tile_ptr, the descriptors of the complete
// tiles and tile_desc_offset_ptr. tile_desc_offset holds one word per row starting in a tile
// that spans empty rows; estimated as min(tiles, empty rows) such tiles, each with the mean
// number of row starts per tile (0 without empty rows).
template <class V>
void estimate_csr5(const csr<V, I>& a, selection_stats& s) {
  const csr5_params p = cpu::resolve_csr5_params(a, {}, csr5_target::gpu);
  const csr5_layout l(p.omega, p.sigma);
  const std::int64_t nnz = a.nnz(), complete = nnz / l.tile_size();
  const std::int64_t tiles = (nnz + l.tile_size() - 1) / l.tile_size();
  const std::int64_t starts = s.rows - s.empty_rows;
  const std::int64_t offsets =
      tiles > 0 ? std::min(tiles, s.empty_rows) * std::min<std::int64_t>(l.tile_size(), (starts + tiles - 1) / tiles) : 0;
  const std::int64_t words = (tiles + 1) + complete * l.tile_words() + (complete + 1) + offsets;
  s.csr5_bytes = csr_bytes(a.rows, nnz, value_type_of<V>(), index_type::i32) + static_cast<std::uint64_t>(words) * 4 +
                 vector_bytes(a);
}

// BCSR with the automatic block size; with blocks larger than 1 x 1, its block count and
// bytes from the conversion itself (which counts the blocks exactly). The rule picks such a
// size only when its arrays are smaller than CSR's, so the conversion holds less than the
// CSR does.
template <class V>
void measure_blocks(const csr<V, I>& a, selection_stats& s) {
  const bcsr_params p = cpu::resolve_bcsr_params(a, {});
  s.bcsr_block = p;
  if (p.block_rows * p.block_cols == 1) {
    s.bcsr_blocks = a.nnz();
    s.bcsr_fill = 1.0;
    return;
  }
  const bcsr<V> b = cpu::csr_to_bcsr(a, p);
  const auto blocks = static_cast<std::int64_t>(b.block_col.size());
  s.bcsr_blocks = blocks;
  s.bcsr_fill = static_cast<double>(a.nnz()) / static_cast<double>(blocks * p.block_rows * p.block_cols);
  s.bcsr_bytes = bytes(b);
}

std::string row_summary(const selection_stats& s) {
  return "longest row " + std::to_string(s.row_max) + " entries, mean " + fixed(s.row_mean, 1);
}

bool has_long_row(const selection_stats& s) {
  return s.row_max >= gpu_long_row_min_entries && static_cast<double>(s.row_max) >= gpu_long_row_over_mean * s.row_mean;
}

template <class V>
void decide_gpu(const csr<V, I>& a, format_choice& c) {
  selection_stats& s = c.stats;
  const bool long_row = has_long_row(s);
  if (s.csr_bytes < gpu_launch_bound_bytes) {
    if (long_row) {
      pick(c, "csr5", "gpu-small-long-row",
           "launch-bound (CSR " + mib(s.csr_bytes) + " < " + mib(gpu_launch_bound_bytes) + ") with a long row: " +
               row_summary(s) + "; CSR5's tiles split it, a row-per-thread kernel would wait for it");
      return;
    }
    pick(c, "csr", "gpu-small",
         "launch-bound (CSR " + mib(s.csr_bytes) + " < " + mib(gpu_launch_bound_bytes) +
             "): one launch of the CSR kernel and no conversion; no long row (" + row_summary(s) + ")");
    return;
  }
  measure_values(a, s);
  if (*s.table_share >= gpu_ccoo_min_table_share) {
    const std::int64_t n = *s.table_values;
    const std::string what = n < static_cast<std::int64_t>(ccoo_table_capacity)
                                 ? std::to_string(n) + (n == 1 ? " distinct value" : " distinct values")
                                 : "its 256 most frequent values cover " + percent(*s.table_share) + " of the entries";
    pick(c, "ccoo", "gpu-value-table",
         "few distinct values: " + what + ", so CCOO stores each value as a 1-byte index into its 256-value table");
    return;
  }
  if (s.row_max * s.rows == s.nnz) {
    pick(c, "hyb", "gpu-uniform-rows",
         "every row holds " + std::to_string(s.row_max) +
             (s.row_max == 1 ? " entry" : " entries") +
             ": HYB's ELL part holds the matrix without padding or tail, one kernel reading CSR's bytes without "
             "row_ptr");
    return;
  }
  if (s.row_mean < gpu_short_row_mean && !long_row) {
    pick(c, "csr", "gpu-short-rows",
         "short rows: mean " + fixed(s.row_mean, 1) + " < " + fixed(gpu_short_row_mean, 1) + " entries, longest " +
             std::to_string(s.row_max) + ": CSR's kernel gives each row one thread and reads the fewest bytes");
    return;
  }
  measure_offsets(a, s);
  if (*s.ccoo_offset_bytes <= gpu_ccoo_max_offset_bytes) {
    pick(c, "ccoo", "gpu-narrow-offsets",
         "local columns: CCOO's column offsets take " + fixed(*s.ccoo_offset_bytes, 2) +
             " bytes per entry on average (at most " + fixed(gpu_ccoo_max_offset_bytes, 0) +
             "), so it reads fewer bytes than CSR also without its value table (" +
             percent(*s.table_share) + " of the entries covered)");
    return;
  }
  estimate_hyb(a, s);
  estimate_csr5(a, s);
  if (!s.hyb_bytes) {
    pick(c, "csr5", "gpu-rows", "HYB cannot hold the matrix (its ELL part would exceed 2^31 - 1 slots)");
    return;
  }
  const double hyb_time = static_cast<double>(*s.hyb_bytes) / gpu_hyb_copy_share;
  const double csr5_time = static_cast<double>(*s.csr5_bytes) / gpu_csr5_copy_share;
  const std::int64_t slots = s.rows * *s.hyb_ell_width, padding = slots - (s.nnz - *s.hyb_tail);
  const std::string estimate =
      "it would read " + mib(*s.hyb_bytes) + " (ELL width " + std::to_string(*s.hyb_ell_width) + " with " +
      percent(slots > 0 ? static_cast<double>(padding) / static_cast<double>(slots) : 0.0) + " padding, " +
      percent(static_cast<double>(*s.hyb_tail) / static_cast<double>(s.nnz)) + " of the entries in the COO tail) at " +
      percent(gpu_hyb_copy_share) + " of copy bandwidth, CSR5 " + mib(*s.csr5_bytes) + " at " +
      percent(gpu_csr5_copy_share) + "; " + row_summary(s);
  if (csr5_time < hyb_time)
    pick(c, "csr5", "gpu-rows", "rows too uneven for HYB: " + estimate);
  else
    pick(c, "hyb", "gpu-rows", "rows even enough for HYB: " + estimate);
}

template <class V>
void decide_cpu(const csr<V, I>& a, format_choice& c) {
  selection_stats& s = c.stats;
  measure_blocks(a, s);
  if (!s.bcsr_bytes) {
    pick(c, "csr", "cpu-blocks",
         "no block structure: BCSR's automatic block size is 1 x 1, so CSR reads the fewest bytes");
    return;
  }
  const bcsr_params b = *s.bcsr_block;
  pick(c, "bcsr", "cpu-blocks",
       "dense blocks: BCSR's automatic block size is " + std::to_string(b.block_rows) + " x " +
           std::to_string(b.block_cols) + ", " + percent(*s.bcsr_fill) + " full, " +
           fixed(static_cast<double>(*s.bcsr_bytes) / static_cast<double>(s.csr_bytes), 2) +
           "x CSR's bytes: one column index per block, the block row's sums in registers");
}

template <class V>
void decide(const csr<V, I>& a, format_choice& c) {
  if (c.device == spmv_device::gpu)
    decide_gpu(a, c);
  else
    decide_cpu(a, c);
}

}  // namespace

format_choice select_format(const any_matrix& m, spmv_device d) {
  format_choice c;
  c.device = d;
  // The statistics come from the CSR of the matrix: the input itself when it is CSR.
  any_matrix converted;
  const any_matrix* in = &m;
  if (format_name(m) != "csr") {
    converted = convert(m, "csr");
    in = &converted;
  }
  const csr_stats cs = std::visit(
      [](const auto& a) -> csr_stats {
        using M = std::remove_cvref_t<decltype(a)>;
        if constexpr (std::is_same_v<M, csr<typename M::value_type, typename M::index_type>>)
          return compute_stats(a);
        else
          fail(errc::bad_input, "select_format: conversion to csr gave " + std::string(M::name));
      },
      *in);
  selection_stats& s = c.stats;
  s.rows = cs.rows;
  s.cols = cs.cols;
  s.nnz = cs.nnz;
  s.row_mean = cs.row_mean;
  s.row_stddev = cs.row_stddev;
  s.row_max = cs.row_max;
  s.empty_rows = cs.empty_rows;
  s.csr_bytes = csr_bytes(cs.rows, cs.nnz, value_type_of(*in), index_type::i32);

  constexpr std::int64_t i32_max = std::numeric_limits<I>::max();
  if (s.nnz == 0) {
    pick(c, "csr", "empty", "no entries: every kernel only scales y, and CSR needs no conversion");
    return c;
  }
  if (s.nnz > i32_max || s.rows > i32_max || s.cols > i32_max) {
    pick(c, "csr", "64-bit",
         std::to_string(s.rows) + " x " + std::to_string(s.cols) + " with " + std::to_string(s.nnz) +
             " entries needs 64-bit indices, which only CSR (and COO) have");
    return c;
  }
  if (index_type_of(*in) == index_type::i64) {
    convert_options narrow;
    narrow.index = index_type::i32;
    converted = convert(*in, "csr", narrow);
    in = &converted;
  }
  std::visit(
      [&](const auto& a) {
        using M = std::remove_cvref_t<decltype(a)>;
        if constexpr (std::is_same_v<M, csr<typename M::value_type, I>>) decide(a, c);
      },
      *in);
  return c;
}

std::string describe_choice(const format_choice& c) {
  return std::string(to_string(c.device)) + ": " + c.format + " (" + c.reason + ")";
}

std::vector<std::pair<std::string, double>> choice_statistics(const format_choice& c) {
  const selection_stats& s = c.stats;
  std::vector<std::pair<std::string, double>> out = {
      {"rows", static_cast<double>(s.rows)},          {"cols", static_cast<double>(s.cols)},
      {"nnz", static_cast<double>(s.nnz)},            {"row_mean", s.row_mean},
      {"row_stddev", s.row_stddev},                   {"row_max", static_cast<double>(s.row_max)},
      {"empty_rows", static_cast<double>(s.empty_rows)}, {"csr_bytes", static_cast<double>(s.csr_bytes)}};
  auto add = [&](const char* name, const auto& v) {
    if (v) out.emplace_back(name, static_cast<double>(*v));
  };
  add("table_values", s.table_values);
  add("table_share", s.table_share);
  add("ccoo_offset_bytes", s.ccoo_offset_bytes);
  add("hyb_ell_width", s.hyb_ell_width);
  add("hyb_tail", s.hyb_tail);
  add("hyb_bytes", s.hyb_bytes);
  add("csr5_bytes", s.csr5_bytes);
  if (s.bcsr_block) {
    out.emplace_back("bcsr_block_rows", s.bcsr_block->block_rows);
    out.emplace_back("bcsr_block_cols", s.bcsr_block->block_cols);
  }
  add("bcsr_blocks", s.bcsr_blocks);
  add("bcsr_fill", s.bcsr_fill);
  add("bcsr_bytes", s.bcsr_bytes);
  return out;
}

}  // namespace spconv
