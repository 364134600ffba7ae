// HYB -> CSR on the CPU: per row block, count each row's ELL entries (up to its first
// padding slot) and its tail entries, scan the counts into row_ptr, then copy each row's
// ELL entries followed by its tail entries. The tail is row-sorted, so a row block's tail is
// one contiguous run found by binary search. Fixed row blocks: thread-count independent.
#include <algorithm>
#include <vector>

#include "convert/cpu/hyb.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
csr<V, std::int32_t> hyb_to_csr(const hyb<V>& a) {
  using I = std::int32_t;
  const std::int64_t rows = a.rows, w = a.params.ell_width;
  const I* ell_col = a.ell.col_idx.data();
  const V* ell_val = a.ell.values.data();
  const auto& t = a.coo;
  const std::int64_t tail = t.nnz();
  // ELL entries of row r: padding only follows a row's entries, so count up to the first.
  auto ell_length = [&](std::int64_t r) {
    std::int64_t k = 0;
    while (k < w && ell_col[k * rows + r] != ell_padding) ++k;
    return k;
  };
  auto first_tail_entry = [&](std::int64_t r) {
    return static_cast<std::int64_t>(std::lower_bound(t.row_idx.begin(), t.row_idx.end(), static_cast<I>(r)) -
                                     t.row_idx.begin());
  };

  csr<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(rows + 1);
  out.row_ptr[0] = 0;
  const int blocks = block_count(rows, 1 << 12);
  std::vector<std::int64_t> nnz_at(blocks + 1, 0);  // per block: entries, then offsets
  // Pass 1: row lengths into row_ptr[r + 1], block totals.
  parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t c = first_tail_entry(lo), total = 0;
    for (std::int64_t r = lo; r < hi; ++r) {
      std::int64_t len = ell_length(r);
      for (; c < tail && t.row_idx[c] == r; ++c) ++len;
      out.row_ptr[r + 1] = static_cast<I>(len);
      total += len;
    }
    nnz_at[b + 1] = total;
  });
  for (int b = 0; b < blocks; ++b) nnz_at[b + 1] += nnz_at[b];
  // Pass 2: lengths -> offsets; pass 3: the entries.
  out.col_idx.resize(nnz_at[blocks]);
  out.values.resize(nnz_at[blocks]);
  parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t run = nnz_at[b];
    for (std::int64_t r = lo; r < hi; ++r) {
      run += out.row_ptr[r + 1];
      out.row_ptr[r + 1] = static_cast<I>(run);
    }
  });
  parallel_blocks(rows, blocks, [&](int, std::int64_t lo, std::int64_t hi) {
    std::int64_t c = first_tail_entry(lo);
    for (std::int64_t r = lo; r < hi; ++r) {
      std::int64_t o = out.row_ptr[r];
      const std::int64_t len = ell_length(r);
      for (std::int64_t k = 0; k < len; ++k, ++o) {
        out.col_idx[o] = ell_col[k * rows + r];
        out.values[o] = ell_val[k * rows + r];
      }
      for (; c < tail && t.row_idx[c] == r; ++c, ++o) {
        out.col_idx[o] = t.col_idx[c];
        out.values[o] = t.values[c];
      }
    }
  });
  return out;
}

#define SPCONV_INST(V) template csr<V, std::int32_t> hyb_to_csr<V>(const hyb<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
