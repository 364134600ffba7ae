// CSR -> CCOO (specs/formats/ccoo.md; Aliaga et al., Euro-Par 2020 Workshops, Sect. 2).
// Rows are padded to whole groups of K entries, the groups cut into chunks of B, and each
// chunk encoded with the smallest fields that hold it. Two parallel passes over the
// chunks: the first picks each chunk's format code (hence its blob size), the second
// writes the blobs at their prefix-summed offsets. Every choice depends only on the
// chunk's own entries and the global value table, never on the thread count.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "convert/cpu/ccoo.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

using I = std::int32_t;
constexpr std::int64_t int32_limit = std::numeric_limits<std::int32_t>::max();

// Groups row r occupies: its entries padded with zeros to a multiple of K, and an empty
// row one all-zero group (Sect. 2: "each empty row is padded with an explicit zero
// element"; "pad each matrix row with zeros so that its dimension becomes an exact
// multiple of K"). So a group never straddles two rows.
std::int64_t row_groups(std::int64_t len, std::int64_t k) { return std::max<std::int64_t>(1, (len + k - 1) / k); }

template <class V>
std::int64_t padded_entries(const csr<V, I>& a, std::int64_t k) {
  const int blocks = block_count(a.rows, 1 << 14);
  std::vector<std::int64_t> part(static_cast<std::size_t>(blocks), 0);
  parallel_blocks(a.rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t s = 0;
    for (std::int64_t r = lo; r < hi; ++r) s += row_groups(a.row_ptr[r + 1] - a.row_ptr[r], k);
    part[b] = s;
  });
  return k * std::accumulate(part.begin(), part.end(), std::int64_t{0});
}

void check_param(std::string_view name, std::int32_t v, std::int32_t max) {
  if (v < 0 || v > max)
    fail(errc::usage, "ccoo: " + std::string(name) + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(max) + "] (0 = automatic)");
}

}  // namespace

template <class V>
ccoo_params resolve_ccoo_params(const csr<V, I>& a, ccoo_params requested) {
  check_param("chunk_b", requested.chunk_b, ccoo_max_chunk_b);
  check_param("chunk_k", requested.chunk_k, ccoo_max_chunk_k);
  ccoo_params p = requested;
  if (p.chunk_b == 0) p.chunk_b = 256;
  if (p.chunk_k == 0) {
    const std::int64_t base = padded_entries(a, 1);
    p.chunk_k = 1;
    for (std::int32_t k : {4, 2})
      if (4 * padded_entries(a, k) <= 5 * base) {
        p.chunk_k = k;
        break;
      }
  }
  return p;
}

template <class V>
ccoo<V> csr_to_ccoo(const csr<V, I>& a, const ccoo_params& requested) {
  using B = ccoo_bits<V>;
  if (a.rows > int32_limit || a.cols > int32_limit)
    fail(errc::unsupported, "ccoo: shape " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                                " exceeds the 32-bit baseline rows/columns and column offsets (at most " +
                                std::to_string(int32_limit) + " rows and columns)");
  validate(a);
  ccoo<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = resolve_ccoo_params(a, requested);
  const std::int64_t nb = out.params.chunk_b, nk = out.params.chunk_k, nnz = a.nnz();
  // Without rows or columns there is nothing to store and no column to pad with.
  if (a.rows == 0 || a.cols == 0) {
    out.chunk_ptr.assign(1, 0);
    out.counts.assign({0, 0});
    return out;
  }
  const std::int64_t entries = padded_entries(a, nk);
  if (entries > int32_limit)
    fail(errc::unsupported, "ccoo: " + std::to_string(entries) +
                                " entries after padding every row to a multiple of chunk_k = " + std::to_string(nk) +
                                " exceed the 32-bit entry count (at most " + std::to_string(int32_limit) +
                                "); use a smaller chunk_k");

  // First group of every row (exclusive scan; the same block partition in both passes).
  const std::int64_t rows = a.rows;
  array<std::int64_t> group_start(static_cast<std::size_t>(rows + 1));
  {
    const int blocks = block_count(rows, 1 << 14);
    std::vector<std::int64_t> part(static_cast<std::size_t>(blocks) + 1, 0);
    parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      std::int64_t s = 0;
      for (std::int64_t r = lo; r < hi; ++r) s += row_groups(a.row_ptr[r + 1] - a.row_ptr[r], nk);
      part[b + 1] = s;
    });
    std::partial_sum(part.begin(), part.end(), part.begin());
    parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      std::int64_t s = part[b];
      for (std::int64_t r = lo; r < hi; ++r) {
        group_start[r] = s;
        s += row_groups(a.row_ptr[r + 1] - a.row_ptr[r], nk);
      }
    });
    group_start[rows] = part[blocks];
  }
  const std::int64_t groups = entries / nk;
  const std::int64_t chunks = (groups + nb - 1) / nb;

  // The value table (Sect. 2 LUT) over every value field, padding zeros included, and a
  // lookup by bit pattern.
  array<V> table = ccoo_value_table(a.values.data(), nnz, entries - nnz);
  std::vector<std::pair<B, std::uint8_t>> lookup(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) lookup[i] = {std::bit_cast<B>(table[i]), static_cast<std::uint8_t>(i)};
  std::sort(lookup.begin(), lookup.end());
  auto table_index = [&](B bits) -> int {
    auto it = std::lower_bound(lookup.begin(), lookup.end(), std::pair<B, std::uint8_t>{bits, 0});
    return it != lookup.end() && it->first == bits ? it->second : -1;
  };
  const int zero_index = table_index(B(0));

  // Calls f(e, r, k) for the chunk's entries in order: e the entry within the chunk, r its
  // row, k its position in the CSR arrays or -1 for padding (a row's padding follows its
  // stored entries).
  auto visit = [&](std::int64_t c, auto&& f) {
    const std::int64_t g0 = c * nb, g1 = std::min(groups, g0 + nb);
    std::int64_t r = std::upper_bound(group_start.begin(), group_start.end(), g0) - group_start.begin() - 1;
    std::int64_t e = 0;
    for (std::int64_t g = g0; g < g1; ++r) {
      const std::int64_t gh = std::min(group_start[r + 1], g1);
      const std::int64_t len = a.row_ptr[r + 1] - a.row_ptr[r];
      for (std::int64_t i = (g - group_start[r]) * nk; i < (gh - group_start[r]) * nk; ++i, ++e)
        f(e, r, i < len ? a.row_ptr[r] + i : std::int64_t{-1});
      g = gh;
    }
  };
  auto chunk_entries = [&](std::int64_t c) { return (std::min(groups, (c + 1) * nb) - c * nb) * nk; };

  // Pass 1: each chunk's baselines and format code (Sect. 2, Table 1: one code per chunk).
  out.chunk_format.resize(chunks);
  out.chunk_row.resize(chunks);
  out.chunk_col.resize(chunks);
  out.chunk_ptr.resize(chunks + 1);
  parallel_for(chunks, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      std::int64_t first_row = -1, last_row = -1, min_col = -1, max_col = -1;
      bool padded = false, covered = true;
      visit(c, [&](std::int64_t e, std::int64_t r, std::int64_t k) {
        if (e == 0) first_row = r;
        last_row = r;
        if (k < 0) {
          padded = true;
          covered = covered && zero_index >= 0;
          return;
        }
        const std::int64_t col = a.col_idx[k];
        min_col = min_col < 0 ? col : std::min(min_col, col);
        max_col = std::max(max_col, col);
        covered = covered && table_index(std::bit_cast<B>(a.values[k])) >= 0;
      });
      // Offsets from the smallest column (the paper's "leftmost" baseline), so unsigned.
      const std::int64_t max_off = min_col < 0 ? 0 : max_col - min_col;
      const int width = max_off <= 0xFF ? 0 : max_off <= 0xFFFF ? 1 : 2;
      std::uint8_t code = static_cast<std::uint8_t>(width << 1);
      if (first_row == last_row) code |= ccoo_code::single_row;
      if (covered) code |= ccoo_code::lut;
      if (padded) code |= ccoo_code::pads;
      out.chunk_format[c] = code;
      out.chunk_row[c] = static_cast<I>(first_row);
      out.chunk_col[c] = static_cast<I>(min_col < 0 ? 0 : min_col);
      out.chunk_ptr[c + 1] = ccoo_chunk_layout(chunk_entries(c), static_cast<std::int32_t>(nk), code, sizeof(V)).size;
    }
  });
  const bool any_lut = std::any_of(out.chunk_format.begin(), out.chunk_format.end(),
                                   [](std::uint8_t code) { return (code & ccoo_code::lut) != 0; });
  if (!any_lut) table.clear();
  out.chunk_ptr[0] = 0;
  for (std::int64_t c = 0; c < chunks; ++c) out.chunk_ptr[c + 1] += out.chunk_ptr[c];

  // Pass 2: the blobs (Sect. 2, Fig. 2): row offsets, pad bitmap, column offsets, values.
  out.blob.resize(out.chunk_ptr[chunks]);
  parallel_for(chunks, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::uint8_t code = out.chunk_format[c];
      const ccoo_layout l = ccoo_chunk_layout(chunk_entries(c), static_cast<std::int32_t>(nk), code, sizeof(V));
      std::uint8_t* p = out.blob.data() + out.chunk_ptr[c];
      std::memset(p, 0, l.size);  // filler and padding fields are zero
      const std::int64_t base_row = out.chunk_row[c], base_col = out.chunk_col[c];
      const bool single = code & ccoo_code::single_row, lut = code & ccoo_code::lut;
      visit(c, [&](std::int64_t e, std::int64_t r, std::int64_t k) {
        if (!single && e % nk == 0) p[l.rows + e / nk] = static_cast<std::uint8_t>(r - base_row);
        if (k < 0) {
          // Column offset 0, value +0.0 (or the table's +0.0), marked in the bitmap.
          p[l.pads + e / 8] |= static_cast<std::uint8_t>(1u << (e % 8));
          if (lut) p[l.values + e] = static_cast<std::uint8_t>(zero_index);
          return;
        }
        const auto off = static_cast<std::uint32_t>(a.col_idx[k] - base_col);
        std::memcpy(p + l.cols + e * l.col_bytes, &off, l.col_bytes);  // little-endian low bytes
        if (lut)
          p[l.values + e] = static_cast<std::uint8_t>(table_index(std::bit_cast<B>(a.values[k])));
        else
          std::memcpy(p + l.values + e * sizeof(V), &a.values[k], sizeof(V));
      });
    }
  });
  out.table = std::move(table);
  out.counts.assign({entries, nnz});
  return out;
}

#define SPCONV_INST(V)                                                                   \
  template ccoo_params resolve_ccoo_params<V>(const csr<V, std::int32_t>&, ccoo_params); \
  template ccoo<V> csr_to_ccoo<V>(const csr<V, std::int32_t>&, const ccoo_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
