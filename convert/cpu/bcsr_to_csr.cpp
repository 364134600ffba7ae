// BCSR -> canonical CSR on the CPU (specs/formats/bcsr.md). A position of a block is an
// entry unless it is +0.0 fill: its bits differ from +0.0, or it is listed in stored_zeros.
// Row i of a block row reads its c-wide slice of every block of that block row, which
// gives the row's columns in increasing order. Two passes (count, fill) over block rows.
#include <algorithm>

#include "convert/cpu/bcsr.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

// The stored_zeros of block row br: those pointing into its blocks' values (usually none).
template <class V>
std::pair<const std::int32_t*, const std::int32_t*> zeros_of_block_row(const bcsr<V>& a, std::int64_t br) {
  const std::int64_t rc = std::int64_t{a.params.block_rows} * a.params.block_cols;
  const std::int32_t* b = a.stored_zeros.data();
  const std::int32_t* e = b + a.stored_zeros.size();
  const std::int32_t* lo = std::lower_bound(b, e, a.block_ptr[br] * rc);
  return {lo, std::lower_bound(lo, e, a.block_ptr[br + 1] * rc)};
}

// Calls f(col, value) for the entries of row i (within block row br) in column order;
// [zlo, zhi) are the block row's stored zeros.
template <class V, class F>
void for_each_row_entry(const bcsr<V>& a, std::int64_t br, std::int64_t i, const std::int32_t* zlo,
                        const std::int32_t* zhi, F&& f) {
  const std::int64_t c = a.params.block_cols, rc = a.params.block_rows * c;
  for (std::int32_t k = a.block_ptr[br]; k < a.block_ptr[br + 1]; ++k) {
    const std::int64_t col0 = std::int64_t{a.block_col[k]} * c, w = std::min(c, a.cols - col0);
    const std::int64_t base = k * rc + i * c;
    for (std::int64_t j = 0; j < w; ++j) {
      const V v = a.values[base + j];
      if (!bcsr_detail::is_fill(v) || std::binary_search(zlo, zhi, base + j)) f(col0 + j, v);
    }
  }
}

}  // namespace

template <class V>
csr<V, std::int32_t> bcsr_to_csr(const bcsr<V>& a) {
  const std::int64_t r = a.params.block_rows, mb = static_cast<std::int64_t>(a.block_ptr.size()) - 1;
  const std::int64_t grain = std::max<std::int64_t>(1, 4096 / r);
  csr<V, std::int32_t> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  out.row_ptr[0] = 0;
  parallel_for(mb, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t br = lo; br < hi; ++br) {
      const auto [zlo, zhi] = zeros_of_block_row(a, br);
      for (std::int64_t i = 0, h = std::min(r, a.rows - br * r); i < h; ++i) {
        std::int32_t n = 0;
        for_each_row_entry(a, br, i, zlo, zhi, [&](std::int64_t, V) { ++n; });
        out.row_ptr[br * r + i + 1] = n;
      }
    }
  });
  // Entries are at most values.size(), which validate() bounds by 2^31 - 1.
  for (std::int64_t row = 0; row < a.rows; ++row) out.row_ptr[row + 1] += out.row_ptr[row];
  out.col_idx.resize(out.row_ptr[a.rows]);
  out.values.resize(out.row_ptr[a.rows]);
  parallel_for(mb, grain, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t br = lo; br < hi; ++br) {
      const auto [zlo, zhi] = zeros_of_block_row(a, br);
      for (std::int64_t i = 0, h = std::min(r, a.rows - br * r); i < h; ++i) {
        std::int32_t at = out.row_ptr[br * r + i];
        for_each_row_entry(a, br, i, zlo, zhi, [&](std::int64_t col, V v) {
          out.col_idx[at] = static_cast<std::int32_t>(col);
          out.values[at] = v;
          ++at;
        });
      }
    }
  });
  return out;
}

#define SPCONV_INST(V) template csr<V, std::int32_t> bcsr_to_csr<V>(const bcsr<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
