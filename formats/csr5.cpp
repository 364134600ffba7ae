// CSR5 validate(): every stored field is recomputed from row_ptr with the thesis's own
// definitions (liu-thesis-csr5.txt sec. 6.3.3-6.3.5, Algorithms 24-26: binary searches on
// row_ptr, per-entry row-start flags), independently of the converter's row walks, and
// compared. Lengths and ranges are checked before anything is indexed.
#include "formats/csr5.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <vector>

#include "formats/instantiate.hpp"

namespace spconv {
namespace {

constexpr std::string_view fmt = "csr5";

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void check_param(std::string_view name, std::int64_t v, std::int64_t max) {
  if (v < 1 || v > max)
    invalid(fmt, "params." + std::string(name) + " = " + std::to_string(v) + " is out of range [1, " +
                     std::to_string(max) + "]");
}

// Last row r with row_ptr[r] <= k: the row holding entry k for k < nnz (Algorithm 24
// line 3, Algorithm 26 line 8), and `rows` for k = nnz.
template <class A>
std::int64_t row_at(const A& row_ptr, std::int64_t k) {
  return (std::upper_bound(row_ptr.begin(), row_ptr.end(), k) - row_ptr.begin()) - 1;
}

}  // namespace

template <class V>
void validate(const csr5<V, std::int32_t, host>& m) {
  check_shape(fmt, m.rows, m.cols, std::numeric_limits<std::int32_t>::max());
  check_param("omega", m.params.omega, csr5_max_omega);
  check_param("sigma", m.params.sigma, csr5_max_sigma);
  const std::int64_t nnz = static_cast<std::int64_t>(m.col_idx.size()), rows = m.rows;
  check_length(fmt, "values", m.values, m.col_idx.size());
  check_length(fmt, "row_ptr", m.row_ptr, static_cast<std::size_t>(rows) + 1);
  check_pointers(fmt, "row_ptr", m.row_ptr, nnz);
  check_indices(fmt, "col_idx", m.col_idx, m.cols);

  const csr5_layout L(m.params.omega, m.params.sigma);
  const std::int64_t T = L.tile_size(), omega = L.omega, sigma = L.sigma;
  const std::int64_t complete = nnz / T, tiles = (nnz + T - 1) / T;

  // ---- tile_ptr (sec. 6.3.3, Algorithm 24) ----
  check_length(fmt, "tile_ptr", m.tile_ptr, static_cast<std::size_t>(tiles) + 1);
  std::vector<std::int64_t> first_row(tiles + 1);
  for (std::int64_t t = 0; t <= tiles; ++t) first_row[t] = row_at(m.row_ptr, std::min(t * T, nnz));
  std::vector<std::int64_t> empty_before(rows + 1, 0);  // empty rows in [0, r)
  for (std::int64_t r = 0; r < rows; ++r)
    empty_before[r + 1] = empty_before[r] + (m.row_ptr[r] == m.row_ptr[r + 1] ? 1 : 0);
  std::vector<bool> has_empty(tiles, false);
  for (std::int64_t t = 0; t <= tiles; ++t) {
    // Tile t spans rows [first_row[t], first_row[t + 1]]; the last of them starts the next
    // tile (or is `rows`) and first_row[t] holds the tile's first entry, so the empty ones
    // lie strictly between.
    const bool empty = t < tiles && empty_before[first_row[t + 1]] - empty_before[first_row[t] + 1] > 0;
    if (t < tiles) has_empty[t] = empty;
    const std::uint32_t expected = static_cast<std::uint32_t>(first_row[t]) | (empty ? csr5_empty_rows_bit : 0u);
    const std::uint32_t got = m.tile_ptr[t];
    if (got != expected)
      invalid(fmt, "tile_ptr[" + std::to_string(t) + "] = " + hex(got) + " (row " + std::to_string(got & csr5_row_mask) +
                       ", empty-rows bit " + std::to_string(got >> 31) + "), expected row " +
                       std::to_string(first_row[t]) + ", empty-rows bit " + std::to_string(empty ? 1 : 0));
  }

  // ---- tile_desc (sec. 6.3.4-6.3.5, Algorithm 25) ----
  check_length(fmt, "tile_desc", m.tile_desc, static_cast<std::size_t>(complete * L.tile_words()));
  std::vector<std::uint8_t> row_start(nnz, 0);  // entry k is the first of a (non-empty) row
  for (std::int64_t r = 0; r < rows; ++r)
    if (m.row_ptr[r] < m.row_ptr[r + 1]) row_start[m.row_ptr[r]] = 1;
  std::vector<std::int64_t> segments(complete);
  std::vector<std::uint64_t> flags(omega);
  for (std::int64_t t = 0; t < complete; ++t) {
    const std::string where = "tile_desc: tile " + std::to_string(t) + " lane ";
    for (std::int64_t i = 0; i < omega; ++i) {
      flags[i] = 0;
      for (std::int64_t j = 0; j < sigma; ++j)
        // The tile's first entry is always flagged: it seals the tile's first segment (sec. 6.3.4).
        if (row_start[t * T + i * sigma + j] || (i == 0 && j == 0)) flags[i] |= std::uint64_t{1} << j;
    }
    std::int64_t y_offset = 0;
    for (std::int64_t i = 0; i < omega; ++i) {
      // seg_offset: for a lane holding a segment start, the number of lanes right of it
      // without any (Algorithm 25 lines 9 and 12); 0 for lanes without one.
      std::int64_t seg_offset = 0;
      if (flags[i] != 0)
        while (i + 1 + seg_offset < omega && flags[i + 1 + seg_offset] == 0) ++seg_offset;
      const std::uint32_t* lane = m.tile_desc.data() + t * L.tile_words() + i;
      const std::uint64_t got_flags = csr5_get_bits(lane, omega, L.bit_flag_pos(), L.sigma);
      const std::uint64_t got_y = csr5_get_bits(lane, omega, 0, L.y_offset_bits);
      const std::uint64_t got_seg = csr5_get_bits(lane, omega, L.seg_offset_pos(), L.seg_offset_bits);
      if (got_flags != flags[i])
        invalid(fmt, where + std::to_string(i) + " bit_flag = " + hex(got_flags) + ", expected " + hex(flags[i]));
      if (got_y != static_cast<std::uint64_t>(y_offset))
        invalid(fmt, where + std::to_string(i) + " y_offset = " + std::to_string(got_y) + ", expected " +
                         std::to_string(y_offset));
      if (got_seg != static_cast<std::uint64_t>(seg_offset))
        invalid(fmt, where + std::to_string(i) + " seg_offset = " + std::to_string(got_seg) + ", expected " +
                         std::to_string(seg_offset));
      for (int w = 0; w < L.words; ++w) {
        const int used = std::clamp(L.used_bits() - 32 * w, 0, 32);
        const std::uint32_t unused_mask = used == 32 ? 0u : ~((std::uint32_t{1} << used) - 1);
        if (lane[w * omega] & unused_mask)
          invalid(fmt, where + std::to_string(i) + " word " + std::to_string(w) + " = " + hex(lane[w * omega]) +
                           " has unused bits set (" + hex(lane[w * omega] & unused_mask) + ")");
      }
      y_offset += std::popcount(flags[i]);
    }
    segments[t] = y_offset;
  }

  // ---- empty_offset: tile_desc_offset_ptr / tile_desc_offset (sec. 6.3.4, Algorithm 26) ----
  check_length(fmt, "tile_desc_offset_ptr", m.tile_desc_offset_ptr, static_cast<std::size_t>(complete) + 1);
  check_pointers(fmt, "tile_desc_offset_ptr", m.tile_desc_offset_ptr,
                 static_cast<std::int64_t>(m.tile_desc_offset.size()));
  for (std::int64_t t = 0; t < complete; ++t) {
    const std::int64_t begin = m.tile_desc_offset_ptr[t], count = m.tile_desc_offset_ptr[t + 1] - begin;
    const std::int64_t expected = has_empty[t] ? segments[t] : 0;
    if (count != expected)
      invalid(fmt, "tile_desc_offset_ptr: tile " + std::to_string(t) + " has " + std::to_string(count) +
                       " empty_offset entries, expected " + std::to_string(expected) +
                       (has_empty[t] ? " (one per segment)" : " (the tile has no empty rows)"));
    std::int64_t s = 0;
    for (std::int64_t i = 0; i < omega && count > 0; ++i)
      for (std::int64_t j = 0; j < sigma; ++j) {
        const std::int64_t k = t * T + i * sigma + j;
        if (!(row_start[k] || k == t * T)) continue;
        const std::uint32_t want = static_cast<std::uint32_t>(row_at(m.row_ptr, k) - first_row[t]);
        const std::uint32_t got = m.tile_desc_offset[begin + s];
        if (got != want)
          invalid(fmt, "tile_desc_offset[" + std::to_string(begin + s) + "] = " + std::to_string(got) + " (tile " +
                           std::to_string(t) + " segment " + std::to_string(s) + "), expected " +
                           std::to_string(want));
        ++s;
      }
  }

  // ---- canonical CSR underneath: columns strictly increasing within each row ----
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = m.row_ptr[r] + 1; k < m.row_ptr[r + 1]; ++k) {
      const std::int64_t p0 = L.stored_pos(k - 1, complete), p1 = L.stored_pos(k, complete);
      if (m.col_idx[p1] <= m.col_idx[p0])
        invalid(fmt, "row " + std::to_string(r) + " is not sorted or has a duplicate: col_idx[" + std::to_string(p0) +
                         "] = " + std::to_string(m.col_idx[p0]) + " then col_idx[" + std::to_string(p1) +
                         "] = " + std::to_string(m.col_idx[p1]) + " (CSR entries " + std::to_string(k - 1) +
                         ", " + std::to_string(k) + ")");
    }
}

#define SPCONV_INST(V) template void validate<V>(const csr5<V, std::int32_t, host>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
