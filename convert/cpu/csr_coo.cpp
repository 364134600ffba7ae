// COO <-> CSR on the CPU.
// COO -> canonical CSR: a stable counting sort by row (per-block histograms keep the
// file order of entries within a row), then each row sorted by column and duplicates
// summed in file order. Rows that arrive sorted (the common case) skip the sort.
#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>

#include "convert/cpu/csr_coo.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V, class I>
csr<V, I> coo_to_csr(const coo<V, I>& a) {
  validate(a);
  const std::int64_t nnz = a.nnz(), rows = a.rows;
  if (nnz > static_cast<std::int64_t>(std::numeric_limits<I>::max()))
    fail(errc::unsupported, std::to_string(nnz) + " entries do not fit " + std::string(type_name<I>()) +
                                " indices; use 64-bit indices (--index int64)");
  csr<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.assign(rows + 1, 0);
  if (nnz == 0) return out;

  // Per-block row histograms cost blocks * rows indices; cap the block count so that
  // this stays within a few times nnz.
  int blocks = block_count(nnz, 1 << 16);
  while (blocks > 1 && static_cast<std::int64_t>(blocks) * rows > 4 * nnz + 4096) --blocks;
  std::vector<array<I>> hist(blocks);
  parallel_blocks(nnz, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    hist[b].assign(rows, 0);
    for (std::int64_t k = lo; k < hi; ++k) ++hist[b][a.row_idx[k]];
  });
  // Row starts, then each block's start inside every row (exclusive scans).
  {
    std::int64_t run = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      out.row_ptr[r] = static_cast<I>(run);
      for (int b = 0; b < blocks; ++b) {
        std::int64_t c = hist[b][r];
        hist[b][r] = static_cast<I>(run);
        run += c;
      }
    }
    out.row_ptr[rows] = static_cast<I>(run);
  }
  array<I> col(nnz);
  array<V> val(nnz);
  parallel_blocks(nnz, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    auto& pos = hist[b];
    for (std::int64_t k = lo; k < hi; ++k) {
      I p = pos[a.row_idx[k]]++;
      col[p] = a.col_idx[k];
      val[p] = a.values[k];
    }
  });
  hist.clear();

  // Sort each row by column (stable: equal columns keep file order), sum duplicates
  // in place, and record the row's unique count.
  array<I> kept(rows);
  std::atomic<bool> any_dup{false};
  parallel_for(rows, 1 << 12, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<std::pair<I, V>> scratch;
    bool dup = false;
    for (std::int64_t r = r0; r < r1; ++r) {
      const I b = out.row_ptr[r], e = out.row_ptr[r + 1];
      bool sorted = true;
      for (I k = b + 1; k < e && sorted; ++k) sorted = col[k] > col[k - 1];
      if (!sorted) {
        scratch.clear();
        for (I k = b; k < e; ++k) scratch.emplace_back(col[k], val[k]);
        std::stable_sort(scratch.begin(), scratch.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
        I w = b;
        for (std::size_t k = 0; k < scratch.size(); ++k) {
          if (w > b && col[w - 1] == scratch[k].first) {
            val[w - 1] += scratch[k].second;
          } else {
            col[w] = scratch[k].first;
            val[w] = scratch[k].second;
            ++w;
          }
        }
        if (w != e) dup = true;
        kept[r] = w - b;
      } else {
        kept[r] = e - b;
      }
    }
    if (dup) any_dup = true;
  });

  if (!any_dup) {
    out.col_idx = std::move(col);
    out.values = std::move(val);
    return out;
  }
  // Compact rows that lost duplicates.
  array<I> ptr(rows + 1);
  ptr[0] = 0;
  for (std::int64_t r = 0; r < rows; ++r) ptr[r + 1] = ptr[r] + kept[r];
  out.col_idx.resize(ptr[rows]);
  out.values.resize(ptr[rows]);
  parallel_for(rows, 1 << 12, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      std::copy_n(col.begin() + out.row_ptr[r], kept[r], out.col_idx.begin() + ptr[r]);
      std::copy_n(val.begin() + out.row_ptr[r], kept[r], out.values.begin() + ptr[r]);
    }
  });
  out.row_ptr = std::move(ptr);
  return out;
}

template <class V, class I>
coo<V, I> csr_to_coo(const csr<V, I>& a) {
  coo<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  const std::int64_t nnz = a.nnz();
  out.row_idx.resize(nnz);
  out.col_idx.assign(a.col_idx.begin(), a.col_idx.end());
  out.values.assign(a.values.begin(), a.values.end());
  parallel_for(a.rows, 1 << 12, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      std::fill(out.row_idx.begin() + a.row_ptr[r], out.row_idx.begin() + a.row_ptr[r + 1], static_cast<I>(r));
  });
  return out;
}

#define SPCONV_INST(V, I)                                  \
  template csr<V, I> coo_to_csr<V, I>(const coo<V, I>&); \
  template coo<V, I> csr_to_coo<V, I>(const csr<V, I>&);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
