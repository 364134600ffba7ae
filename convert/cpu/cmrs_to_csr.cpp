// CMRS -> canonical CSR (shared/papers/cmrs-koza.txt sec. 3: "the conversion between the
// CRS and CMRS formats is trivial and easy to parallelize"; specs/formats/cmrs.md).
// Strips are independent: each knows where its entries start in CSR order, counts its
// rows, and scatters its entries, so the work runs in parallel over strips.
//  * Basic layout: a strip's slots are its entries (strip_ptr is also the CSR offset);
//    a stable counting sort by row in strip restores (row, column) order from either
//    stored order (CSR order or, with sort_columns, column order).
//  * Sec. 6.7 layout: entry_slot[k] is the slot of CSR entry k; slots it does not name
//    are padding and are dropped. A strip's entries are a contiguous range of k, found by
//    binary search since entry_slot follows strip order.
#include <algorithm>
#include <array>

#include "convert/cpu/cmrs.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
csr<V, std::int32_t> cmrs_to_csr(const cmrs<V>& a) {
  csr<V, std::int32_t> out;
  out.rows = a.rows;
  out.cols = a.cols;
  const int h = a.params.height;
  const std::int64_t strips = cmrs_strips(a.rows, h), nnz = a.nnz();
  const bool reordered = a.params.modulo < cmrs_warp;
  out.row_ptr.resize(a.rows + 1);
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  out.row_ptr[a.rows] = static_cast<std::int32_t>(nnz);

  // First CSR position of strip j's entries.
  auto strip_start = [&](std::int64_t j) -> std::int64_t {
    if (!reordered) return a.strip_ptr[j];
    const std::int32_t first_slot = a.strip_ptr[j];
    return std::partition_point(a.entry_slot.begin(), a.entry_slot.end(),
                                [&](std::int32_t s) { return s < first_slot; }) -
           a.entry_slot.begin();
  };

  parallel_for(strips, 1 << 10, [&](std::int64_t j0, std::int64_t j1) {
    std::int64_t next_start = strip_start(j0);
    for (std::int64_t j = j0; j < j1; ++j) {
      const std::int64_t begin = next_start, end = next_start = strip_start(j + 1);
      // The slot of the strip's i-th entry, in stored order.
      auto slot = [&](std::int64_t i) -> std::int64_t { return reordered ? a.entry_slot[begin + i] : begin + i; };
      const std::int64_t r0 = j * h, height_here = std::min<std::int64_t>(h, a.rows - r0);
      std::array<std::int64_t, cmrs_max_height> pos{};
      for (std::int64_t i = 0; i < end - begin; ++i) ++pos[cmrs_row(a.col_row[slot(i)])];
      std::int64_t run = begin;
      for (std::int64_t r = 0; r < height_here; ++r) {
        out.row_ptr[r0 + r] = static_cast<std::int32_t>(run);
        const std::int64_t count = pos[r];
        pos[r] = run;
        run += count;
      }
      for (std::int64_t i = 0; i < end - begin; ++i) {
        const std::int64_t s = slot(i), k = pos[cmrs_row(a.col_row[s])]++;
        out.col_idx[k] = static_cast<std::int32_t>(cmrs_col(a.col_row[s]));
        out.values[k] = a.values[s];
      }
    }
  });
  return out;
}

#define SPCONV_INST(V) template csr<V, std::int32_t> cmrs_to_csr<V>(const cmrs<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
