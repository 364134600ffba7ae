// CSR -> CMRS (shared/papers/cmrs-koza.txt sec. 3, 4 and 6.7; specs/formats/cmrs.md).
// Basic layout (modulo 32): StripPtr[j] = RowPtr[j * height] and each column word gains
// the row's remainder modulo height (sec. 3), optionally sorted by column inside the strip
// (sec. 4). Sec. 6.7 layout (modulo < 32): each strip is planned into chunks of 32 slots,
// then written; strips are independent, so both passes run in parallel over strips and
// their outputs are placed by a prefix sum (the result never depends on the threads).
#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "convert/cpu/cmrs.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

namespace {

constexpr std::int64_t strip_grain = 1 << 10;

using row_counts = std::array<std::int64_t, cmrs_max_height>;

// Fewest chunks that can hold a strip whose rows have `len` entries, when a chunk holds
// 32 slots and at most `modulo` entries of any one row (more would collide on lane %
// modulo). Both ceil(total / 32) and ceil(longest / modulo) are lower bounds, and their
// maximum C suffices: placing entries is a flow from rows to chunks (capacity modulo per
// row and chunk, 32 per chunk) whose min cut says C chunks suffice iff for every k <= C
// the excess e(k) = sum_r max(0, len_r - modulo*k) fits the other C - k chunks;
// k + e(k) / 32 is convex in k, so only k = 0 and k = ceil(longest / modulo) matter.
std::int64_t min_chunks(const row_counts& len, int height, int modulo) {
  std::int64_t total = 0, longest = 0;
  for (int r = 0; r < height; ++r) {
    total += len[r];
    longest = std::max(longest, len[r]);
  }
  return std::max((total + cmrs_warp - 1) / cmrs_warp, (longest + modulo - 1) / modulo);
}

// Splits a strip into `chunks` = min_chunks(rem) chunks: calls chunk(take) once per
// chunk, take[r] = how many of row r's next entries the chunk holds. First every row
// takes what it must so that at most modulo per later chunk remain, then the room left
// goes to the rows with the most entries left (ties: lower row first), up to modulo per
// row. This always fits: the rows still meet both bounds of min_chunks for one chunk
// less afterwards. Mandatory parts are each <= modulo (rem_r <= modulo * chunks left)
// and sum to e(later) <= 32 (the flow condition at k = later); and the chunk ends
// either full, or with every row reduced by min(modulo, rem_r), leaving e(1) <= 32 *
// (chunks left - 1) entries (the condition at k = 1).
template <class Chunk>
void plan_strip(row_counts rem, int height, int modulo, std::int64_t chunks, Chunk&& chunk) {
  std::array<int, cmrs_max_height> order;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t later = chunks - c - 1;
    row_counts take{};
    std::int64_t room = cmrs_warp;
    for (int r = 0; r < height; ++r) {
      take[r] = std::max<std::int64_t>(0, rem[r] - modulo * later);
      room -= take[r];
    }
    std::iota(order.begin(), order.begin() + height, 0);
    std::stable_sort(order.begin(), order.begin() + height,
                     [&](int x, int y) { return rem[x] - take[x] > rem[y] - take[y]; });
    for (int i = 0; i < height && room > 0; ++i) {
      const int r = order[i];
      const std::int64_t extra = std::min({modulo - take[r], rem[r] - take[r], room});
      take[r] += extra;
      room -= extra;
    }
    for (int r = 0; r < height; ++r) rem[r] -= take[r];
    chunk(take);
  }
}

template <class V>
void build_basic(const csr<V, std::int32_t>& a, cmrs<V>& out, std::int64_t strips) {
  const int h = out.params.height;
  const std::int64_t nnz = a.nnz();
  out.strip_ptr.resize(strips + 1);
  out.col_row.resize(nnz);
  out.values.resize(nnz);
  parallel_for(strips, strip_grain, [&](std::int64_t j0, std::int64_t j1) {
    std::vector<std::pair<std::uint32_t, V>> scratch;
    for (std::int64_t j = j0; j < j1; ++j) {
      const std::int64_t r0 = j * h, r1 = std::min(r0 + h, a.rows);
      out.strip_ptr[j] = a.row_ptr[r0];
      for (std::int64_t row = r0; row < r1; ++row)
        for (std::int32_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
          out.col_row[k] = cmrs_pack(a.col_idx[k], row - r0);
          out.values[k] = a.values[k];
        }
      if (out.params.sort_columns) {
        // Column words are column << 4 | row, so their order is (column, row) order;
        // positions are unique in canonical CSR, hence so are the keys.
        const std::int64_t b = a.row_ptr[r0], e = a.row_ptr[r1];
        scratch.clear();
        for (std::int64_t k = b; k < e; ++k) scratch.emplace_back(out.col_row[k], out.values[k]);
        std::sort(scratch.begin(), scratch.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (std::int64_t k = b; k < e; ++k) {
          out.col_row[k] = scratch[k - b].first;
          out.values[k] = scratch[k - b].second;
        }
      }
    }
  });
  out.strip_ptr[strips] = static_cast<std::int32_t>(nnz);
}

template <class V>
void build_reordered(const csr<V, std::int32_t>& a, cmrs<V>& out, std::int64_t strips) {
  const int h = out.params.height, modulo = out.params.modulo;
  auto lengths = [&](std::int64_t j) {
    row_counts len{};
    const std::int64_t r0 = j * h, r1 = std::min(r0 + h, a.rows);
    for (std::int64_t row = r0; row < r1; ++row) len[row - r0] = a.row_ptr[row + 1] - a.row_ptr[row];
    return len;
  };

  // Pass 1: chunks per strip.
  std::vector<std::int64_t> chunks(strips);
  parallel_for(strips, strip_grain, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j) chunks[j] = min_chunks(lengths(j), h, modulo);
  });
  std::int64_t slots = 0;
  out.strip_ptr.resize(strips + 1);
  for (std::int64_t j = 0; j < strips; ++j) {
    out.strip_ptr[j] = static_cast<std::int32_t>(slots);
    slots += chunks[j] * cmrs_warp;
    if (slots > std::numeric_limits<std::int32_t>::max())
      fail(errc::unsupported, "cmrs: the sec. 6.7 layout (modulo " + std::to_string(modulo) +
                                  ") pads the matrix to more than 2^31 - 1 slots, beyond its 32-bit strip_ptr; "
                                  "use the basic layout (modulo 32) or a larger modulo");
  }
  out.strip_ptr[strips] = static_cast<std::int32_t>(slots);
  out.col_row.resize(slots);
  out.values.resize(slots);
  out.entry_slot.resize(a.nnz());

  // Pass 2: each chunk holds the planned runs in row order (a run of <= modulo
  // consecutive lanes never repeats lane % modulo), then padding: +0.0 in the column of
  // the chunk's last entry (an x element the warp already loads), in the lowest row of
  // the strip still free on the padding lane's lane % modulo (one exists: height *
  // modulo >= 32). Padding may use rows past the matrix end in the last strip.
  parallel_for(strips, strip_grain, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j) {
      const std::int64_t r0 = j * h;
      std::array<std::int64_t, cmrs_max_height> next{};
      for (std::int64_t row = r0; row < std::min(r0 + h, a.rows); ++row) next[row - r0] = a.row_ptr[row];
      std::int64_t base = out.strip_ptr[j];
      plan_strip(lengths(j), h, modulo, chunks[j], [&](const row_counts& take) {
        std::array<std::uint32_t, cmrs_max_height> used{};  // per row: bit lane % modulo taken
        int lane = 0;
        for (int r = 0; r < h; ++r)
          for (std::int64_t t = 0; t < take[r]; ++t, ++lane) {
            const std::int64_t k = next[r]++, s = base + lane;
            out.col_row[s] = cmrs_pack(a.col_idx[k], r);
            out.values[s] = a.values[k];
            out.entry_slot[k] = static_cast<std::int32_t>(s);
            used[r] |= std::uint32_t{1} << (lane % modulo);
          }
        const std::int64_t pad_col = cmrs_col(out.col_row[base + lane - 1]);
        for (; lane < cmrs_warp; ++lane) {
          const std::uint32_t bit = std::uint32_t{1} << (lane % modulo);
          int r = 0;
          while (used[r] & bit) ++r;
          used[r] |= bit;
          out.col_row[base + lane] = cmrs_pack(pad_col, r);
          out.values[base + lane] = V(0);
        }
        base += cmrs_warp;
      });
    }
  });
}

}  // namespace

int cmrs_automatic_height(std::int64_t rows, std::int64_t nnz, int value_bytes) {
  const int paper = value_bytes == 4 ? 6 : 4;  // sec. 6.3, K20M
  if (rows <= 0 || nnz <= 0) return paper;
  // Compared in integers: mean < m  <=>  nnz < m * rows (rows <= 2^31, so no overflow).
  if (nnz < cmrs_short_row_mean * rows) return cmrs_max_height;
  if (nnz < cmrs_long_row_mean * rows) return cmrs_mid_height;
  return paper;
}

template <class V>
cmrs_params resolve_cmrs_params(const csr<V, std::int32_t>& a, cmrs_params p) {
  if (p.modulo == 0) p.modulo = cmrs_warp;
  if (p.modulo != 2 && p.modulo != 4 && p.modulo != 8 && p.modulo != 16 && p.modulo != cmrs_warp)
    fail(errc::usage, "cmrs: modulo = " + std::to_string(p.modulo) +
                          " is not one of 2, 4, 8, 16, 32 (0: automatic, 32 = basic layout)");
  if (p.height == 0)
    p.height = p.modulo < cmrs_warp ? cmrs_max_height
                                    : cmrs_automatic_height(a.rows, a.nnz(), static_cast<int>(sizeof(V)));
  if (p.height < 1 || p.height > cmrs_max_height)
    fail(errc::usage, "cmrs: height = " + std::to_string(p.height) + " is out of range [1, 16] (0: automatic)");
  if (p.modulo < cmrs_warp && p.height * p.modulo < cmrs_warp)
    fail(errc::usage, "cmrs: height * modulo = " + std::to_string(p.height) + " * " + std::to_string(p.modulo) +
                          " is below 32: a warp's 32 slots cannot avoid buffer collisions (sec. 6.7)");
  if (p.modulo < cmrs_warp && p.sort_columns)
    fail(errc::usage,
         "cmrs: sort_columns applies to the basic layout only (modulo 32), not to modulo " + std::to_string(p.modulo));
  return p;
}

template <class V>
cmrs<V> csr_to_cmrs(const csr<V, std::int32_t>& a, const cmrs_params& requested) {
  cmrs<V> out;
  out.params = resolve_cmrs_params(a, requested);
  if (a.cols > cmrs_max_cols)
    fail(errc::unsupported, "cmrs: " + std::to_string(a.cols) +
                                " columns do not fit the 28-bit column field (sec. 4: fewer than 2^28 columns)");
  out.rows = a.rows;
  out.cols = a.cols;
  const std::int64_t strips = cmrs_strips(a.rows, out.params.height);
  if (out.params.modulo == cmrs_warp)
    build_basic(a, out, strips);
  else
    build_reordered(a, out, strips);
  return out;
}

#define SPCONV_INST(V)                                                                   \
  template cmrs_params resolve_cmrs_params<V>(const csr<V, std::int32_t>&, cmrs_params); \
  template cmrs<V> csr_to_cmrs<V>(const csr<V, std::int32_t>&, const cmrs_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
