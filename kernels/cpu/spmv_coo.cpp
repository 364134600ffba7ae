#include "kernels/cpu/spmv_coo.hpp"

#include <algorithm>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V, class I>
void spmv(const coo<V, I>& a, V alpha, const V* x, V beta, V* y) {
  const std::int64_t nnz = a.nnz();
  // Scale y first (beta == 0 must not read y), then accumulate alpha * a_ij * x_j.
  parallel_for(a.rows, 1 << 14, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) y[r] = beta == V(0) ? V(0) : beta * y[r];
  });
  // Row-sorted triplets (what CSR -> COO gives) split at row boundaries, so threads own
  // disjoint rows; others are summed in entry order by one thread. Either way the sum
  // of each row runs in entry order: deterministic.
  const bool row_sorted = std::is_sorted(a.row_idx.begin(), a.row_idx.end());
  const int blocks = row_sorted ? block_count(nnz, 1 << 15) : 1;
  std::vector<std::int64_t> cut(blocks + 1, nnz);
  cut[0] = 0;
  for (int b = 1; b < blocks; ++b) {
    std::int64_t k = nnz * b / blocks;
    // Move the cut to the first entry of the row containing k.
    cut[b] = std::lower_bound(a.row_idx.begin(), a.row_idx.end(), a.row_idx[k]) - a.row_idx.begin();
  }
  parallel_blocks(blocks, blocks, [&](int, std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) {
      std::int64_t k = cut[b], end = cut[b + 1];
      while (k < end) {
        const I r = a.row_idx[k];
        V sum = 0;
        if (row_sorted) {
          for (; k < end && a.row_idx[k] == r; ++k) sum += a.values[k] * x[a.col_idx[k]];
        } else {
          sum = a.values[k] * x[a.col_idx[k]];
          ++k;
        }
        y[r] += alpha * sum;
      }
    }
  });
}

#define SPCONV_INST(V, I) template void spmv<V, I>(const coo<V, I>&, V, const V*, V, V*);
SPCONV_FOR_VALUE_INDEX(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
