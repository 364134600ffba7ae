// validate() for ELL and HYB. Both guard the loading of untrusted files: every length is
// checked before any element is read, and every product is checked before it is formed.
#include <cmath>
#include <limits>
#include <string>

#include "formats/hyb.hpp"
#include "formats/instantiate.hpp"

namespace spconv {

namespace {

constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();

std::string str(std::int64_t v) { return std::to_string(v); }

// The ELL invariants, for a standalone ELL (fmt "ell", prefix "") or HYB's part (fmt "hyb",
// prefix "ell/"). Returns the number of entries (non-padding slots).
template <class V, class I>
std::int64_t check_ell_part(const ell<V, I, host>& m, std::string_view fmt, const std::string& pre) {
  const std::int64_t rows = m.rows, cols = m.cols, w = m.params.width;
  if (w < 0) invalid(fmt, pre + "width = " + str(w) + " is negative");
  // Slot k of row r lives at k * rows + r, a 32-bit index (sec. 5.2.2 layout, column-major).
  if (rows > 0 && w > int32_max / rows)
    invalid(fmt, pre + "width " + str(w) + " times " + str(rows) + " rows exceeds 2^31-1 slots (32-bit slot index)");
  const std::int64_t slots = rows * w;
  check_length(fmt, pre + "col_idx", m.col_idx, static_cast<std::size_t>(slots));
  check_length(fmt, pre + "values", m.values, static_cast<std::size_t>(slots));

  std::int64_t entries = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t prev = -1;  // slot of the row's previous entry
    bool padded = false;
    for (std::int64_t k = 0; k < w; ++k) {
      const std::int64_t s = k * rows + r;
      const std::int64_t c = m.col_idx[s];
      // Built only on failure: this loop visits every slot.
      auto where = [&] { return " (row " + str(r) + ", slot " + str(k) + ")"; };
      if (c == ell_padding) {
        // +0 exactly (not -0, not NaN), so that the arrays of a matrix are unique.
        const V v = m.values[s];
        if (!(v == V(0) && !std::signbit(v)))
          invalid(fmt, pre + "values[" + str(s) + "] = " + std::to_string(v) + " in a padding slot" + where() +
                           ", expected +0");
        padded = true;
        continue;
      }
      if (c < ell_padding || c >= cols)
        invalid(fmt, pre + "col_idx[" + str(s) + "] = " + str(c) + where() + " is out of range [-1, " + str(cols) + ")");
      if (padded)
        invalid(fmt, pre + "col_idx[" + str(s) + "] = " + str(c) + where() +
                         " follows a padding slot: padding must come after a row's entries");
      if (prev >= 0 && c <= m.col_idx[prev])
        invalid(fmt, pre + "row " + str(r) + " is not sorted or has a duplicate: col_idx[" + str(prev) + "] = " +
                         str(m.col_idx[prev]) + ", col_idx[" + str(s) + "] = " + str(c));
      prev = s;
      ++entries;
    }
  }
  return entries;
}

void check_cap(std::string_view fmt, std::string_view width_name, std::int64_t rows, std::int64_t w,
               std::int64_t nnz) {
  const std::int64_t cap = ell_slot_cap(nnz, rows);
  if (rows * w > cap)
    invalid(fmt, std::string(width_name) + " " + str(w) + " gives " + str(rows * w) +
                     " ELL slots, beyond the container cap 64 * (nnz + rows + 1) + 2^20 = " + str(cap));
}

}  // namespace

template <class V, class I>
void validate(const ell<V, I, host>& m) {
  constexpr std::string_view n = "ell";
  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());
  const std::int64_t entries = check_ell_part(m, n, "");
  check_cap(n, "width", m.rows, m.params.width, entries);
}

template <class V, class I>
void validate(const hyb<V, I, host>& m) {
  constexpr std::string_view n = "hyb";
  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());
  auto shape = [](std::int64_t r, std::int64_t c) { return str(r) + " x " + str(c); };
  if (m.ell.rows != m.rows || m.ell.cols != m.cols)
    invalid(n, "ell part has shape " + shape(m.ell.rows, m.ell.cols) + ", the matrix " + shape(m.rows, m.cols));
  if (m.coo.rows != m.rows || m.coo.cols != m.cols)
    invalid(n, "coo part has shape " + shape(m.coo.rows, m.coo.cols) + ", the matrix " + shape(m.rows, m.cols));
  if (m.ell.params.width != m.params.ell_width)
    invalid(n, "ell part has width " + str(m.ell.params.width) + ", ell_width is " + str(m.params.ell_width));

  const std::int64_t ell_entries = check_ell_part(m.ell, n, "ell/");

  const auto& t = m.coo;
  check_length(n, "coo/col_idx", t.col_idx, t.row_idx.size());
  check_length(n, "coo/values", t.values, t.row_idx.size());
  check_indices(n, "coo/row_idx", t.row_idx, m.rows);
  check_indices(n, "coo/col_idx", t.col_idx, m.cols);
  const std::int64_t rows = m.rows, w = m.params.ell_width;
  const std::int64_t tail = static_cast<std::int64_t>(t.row_idx.size());
  for (std::int64_t i = 0; i < tail; ++i) {
    const std::int64_t r = t.row_idx[i], c = t.col_idx[i];
    if (i > 0 && (r < t.row_idx[i - 1] || (r == t.row_idx[i - 1] && c <= t.col_idx[i - 1])))
      invalid(n, "coo tail is not sorted by (row, column) or has a duplicate at " + str(i) + ": (" +
                     str(t.row_idx[i - 1]) + ", " + str(t.col_idx[i - 1]) + ") then (" + str(r) + ", " + str(c) + ")");
    if (w == 0 || (i > 0 && r == t.row_idx[i - 1])) continue;
    // The first tail entry of row r: the row spills into the tail only once its w ELL slots
    // are used, and continues after its last ELL column (sec. 5.3.1 split of a row).
    const std::int64_t s = (w - 1) * rows + r;
    const std::int64_t last = m.ell.col_idx[s];
    if (last == ell_padding)
      invalid(n, "row " + str(r) + " has coo entries (coo/row_idx[" + str(i) + "]) but its ELL slots are not full (ell/col_idx[" +
                     str(s) + "] is padding)");
    if (c <= last)
      invalid(n, "row " + str(r) + ": coo/col_idx[" + str(i) + "] = " + str(c) +
                     " does not come after the row's last ELL column ell/col_idx[" + str(s) + "] = " + str(last));
  }
  // X -> CSR needs 32-bit row offsets.
  const std::int64_t nnz = ell_entries + tail;
  if (nnz > int32_max) invalid(n, str(nnz) + " entries do not fit 32-bit CSR offsets (max 2^31-1)");
  check_cap(n, "ell_width", rows, w, nnz);
}

#define SPCONV_INST(V)                                             \
  template void validate<V, std::int32_t>(const ell<V, std::int32_t, host>&); \
  template void validate<V, std::int32_t>(const hyb<V, std::int32_t, host>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
