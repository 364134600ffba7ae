// validate() for CMRS: every invariant of specs/formats/cmrs.md, checked in an order that
// never indexes an array before its length is known to be right (this guards loading
// untrusted files).
#include "formats/cmrs.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "formats/instantiate.hpp"

namespace spconv {

namespace {

constexpr std::string_view fmt = "cmrs";

std::string slot_name(std::int64_t s) { return "col_row[" + std::to_string(s) + "]"; }

void check_params(const cmrs_params& p) {
  if (p.height < 1 || p.height > cmrs_max_height)
    invalid(fmt, "height = " + std::to_string(p.height) + " is out of range [1, 16]");
  if (p.modulo != 2 && p.modulo != 4 && p.modulo != 8 && p.modulo != 16 && p.modulo != cmrs_warp)
    invalid(fmt, "modulo = " + std::to_string(p.modulo) + " is not one of 2, 4, 8, 16, 32");
  if (p.modulo < cmrs_warp && p.height * p.modulo < cmrs_warp)
    invalid(fmt, "height * modulo = " + std::to_string(p.height * p.modulo) +
                     " is below 32: a chunk of 32 slots cannot avoid buffer collisions");
  if (p.modulo < cmrs_warp && p.sort_columns)
    invalid(fmt, "sort_columns is set with modulo = " + std::to_string(p.modulo) +
                     " (column order exists only in the basic layout, modulo 32)");
}

// Column and row-in-strip fields of every slot: column < cols, row in strip < height.
// Whether the row exists in the matrix is checked for entries only (padding may use the
// rows past the end of the last strip).
void check_words(const array<std::uint32_t>& words, std::int64_t cols, int height) {
  for (std::size_t s = 0; s < words.size(); ++s) {
    if (cmrs_col(words[s]) >= cols)
      invalid(fmt, slot_name(static_cast<std::int64_t>(s)) + " has column " + std::to_string(cmrs_col(words[s])) +
                       ", out of range [0, " + std::to_string(cols) + ")");
    if (cmrs_row(words[s]) >= height)
      invalid(fmt, slot_name(static_cast<std::int64_t>(s)) + " has row in strip " + std::to_string(cmrs_row(words[s])) +
                       ", not below height " + std::to_string(height));
  }
}

void check_row_exists(std::uint32_t word, std::int64_t strip, std::int64_t slot, int height, std::int64_t rows) {
  const std::int64_t row = strip * height + cmrs_row(word);
  if (row >= rows)
    invalid(fmt, slot_name(slot) + " is an entry of row " + std::to_string(row) + " of strip " + std::to_string(strip) +
                     ", but the matrix has " + std::to_string(rows) + " rows");
}

// Basic layout: slots are the entries, strictly increasing by (row, column), or by
// (column, row) with sort_columns; strictly, so that no position is stored twice.
template <class V>
void check_basic(const cmrs<V>& m, std::int64_t strips) {
  check_length(fmt, "entry_slot", m.entry_slot, 0);
  const bool by_col = m.params.sort_columns;
  for (std::int64_t j = 0; j < strips; ++j) {
    for (std::int64_t s = m.strip_ptr[j]; s < m.strip_ptr[j + 1]; ++s) {
      check_row_exists(m.col_row[s], j, s, m.params.height, m.rows);
      if (s == m.strip_ptr[j]) continue;
      const std::uint32_t a = m.col_row[s - 1], b = m.col_row[s];
      const bool increasing = by_col ? a < b : (cmrs_row(a) < cmrs_row(b) || (cmrs_row(a) == cmrs_row(b) && a < b));
      if (!increasing)
        invalid(fmt, "strip " + std::to_string(j) + " is not in " + (by_col ? "(column, row)" : "(row, column)") +
                         " order or stores a position twice: " + slot_name(s - 1) + " = (row " +
                         std::to_string(cmrs_row(a)) + ", column " + std::to_string(cmrs_col(a)) + "), " +
                         slot_name(s) + " = (row " + std::to_string(cmrs_row(b)) + ", column " +
                         std::to_string(cmrs_col(b)) + ")");
    }
  }
}

// Sec. 6.7 layout: strips are whole chunks of 32 slots; within a chunk no two slots share
// (row in strip, lane % modulo); entry_slot names distinct slots, strip by strip, in
// (row, column) order inside each strip; the slots it does not name hold +0.0.
template <class V>
void check_reordered(const cmrs<V>& m, std::int64_t strips) {
  const std::int64_t slots = static_cast<std::int64_t>(m.col_row.size());
  const int modulo = m.params.modulo;
  for (std::int64_t j = 0; j < strips; ++j) {
    const std::int64_t b = m.strip_ptr[j], e = m.strip_ptr[j + 1];
    if ((e - b) % cmrs_warp != 0)
      invalid(fmt, "strip " + std::to_string(j) + " holds " + std::to_string(e - b) +
                       " slots, not a multiple of 32 (modulo < 32 pads strips to whole chunks)");
    for (std::int64_t c = b; c < e; c += cmrs_warp) {
      std::array<std::uint32_t, cmrs_max_height> used{};  // per row in strip: bit = lane % modulo
      for (int lane = 0; lane < cmrs_warp; ++lane) {
        const std::uint32_t w = m.col_row[c + lane];
        const std::uint32_t bit = std::uint32_t{1} << (lane % modulo);
        if (used[cmrs_row(w)] & bit)
          invalid(fmt, "strip " + std::to_string(j) + ": " + slot_name(c + lane) + " (lane " + std::to_string(lane) +
                           ", row in strip " + std::to_string(cmrs_row(w)) +
                           ") collides with an earlier slot of its chunk on lane % " + std::to_string(modulo));
        used[cmrs_row(w)] |= bit;
      }
    }
  }

  check_indices(fmt, "entry_slot", m.entry_slot, slots);
  array<std::uint8_t> named(slots, 0);
  std::int64_t j = 0;
  for (std::size_t k = 0; k < m.entry_slot.size(); ++k) {
    const std::int64_t s = m.entry_slot[k];
    if (named[s]) invalid(fmt, "entry_slot[" + std::to_string(k) + "] = " + std::to_string(s) + " names a slot twice");
    named[s] = 1;
    if (s < m.strip_ptr[j])
      invalid(fmt, "entry_slot[" + std::to_string(k) + "] = " + std::to_string(s) +
                       " goes back to an earlier strip (entries must follow strip order)");
    const bool same_strip = s < m.strip_ptr[j + 1];
    while (s >= m.strip_ptr[j + 1]) ++j;  // ends: s < slots = strip_ptr[strips]
    check_row_exists(m.col_row[s], j, s, m.params.height, m.rows);
    if (k == 0 || !same_strip) continue;
    const std::uint32_t a = m.col_row[m.entry_slot[k - 1]], w = m.col_row[s];
    if (cmrs_row(a) > cmrs_row(w) || (cmrs_row(a) == cmrs_row(w) && a >= w))
      invalid(fmt, "entry_slot[" + std::to_string(k - 1) + "] and entry_slot[" + std::to_string(k) +
                       "] are not in (row, column) order within strip " + std::to_string(j) +
                       " or name the same position: (row " + std::to_string(cmrs_row(a)) + ", column " +
                       std::to_string(cmrs_col(a)) + ") then (row " + std::to_string(cmrs_row(w)) + ", column " +
                       std::to_string(cmrs_col(w)) + ")");
  }
  for (std::int64_t s = 0; s < slots; ++s)
    if (!named[s] && (m.values[s] != V(0) || std::signbit(m.values[s])))
      invalid(fmt, "padding slot " + std::to_string(s) + " (named by no entry_slot) holds " +
                       std::to_string(m.values[s]) + ", expected +0.0");
}

}  // namespace

template <class V>
void validate(const cmrs<V, std::int32_t, host>& m) {
  check_shape(fmt, m.rows, m.cols, std::numeric_limits<std::int32_t>::max());
  if (m.cols > cmrs_max_cols)
    invalid(fmt, std::to_string(m.cols) +
                     " columns exceed the 28-bit column field (sec. 4: fewer than 2^28 columns)");
  check_params(m.params);
  const std::int64_t strips = cmrs_strips(m.rows, m.params.height);
  check_length(fmt, "strip_ptr", m.strip_ptr, static_cast<std::size_t>(strips) + 1);
  check_pointers(fmt, "strip_ptr", m.strip_ptr, static_cast<std::int64_t>(m.col_row.size()));
  check_length(fmt, "values", m.values, m.col_row.size());
  check_words(m.col_row, m.cols, m.params.height);
  if (m.params.modulo == cmrs_warp)
    check_basic(m, strips);
  else
    check_reordered(m, strips);
}

#define SPCONV_INST(V) template void validate<V>(const cmrs<V, std::int32_t, host>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
