#include "kernels/cpu/spmv_hyb.hpp"

#include <algorithm>
#include <array>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
void spmv(const hyb<V>& a, V alpha, const V* x, V beta, V* y) {
  using I = std::int32_t;
  const std::int64_t rows = a.rows, w = a.params.ell_width;
  const I* ell_col = a.ell.col_idx.data();
  const V* ell_val = a.ell.values.data();
  const auto& t = a.coo;
  const std::int64_t tail = t.nnz();
  // Rows per tile: the tile's partial sums stay in L1 while the slots stream past.
  constexpr std::int64_t tile = 256;

  parallel_for(rows, 1 << 12, [&](std::int64_t lo, std::int64_t hi) {
    std::int64_t c = std::lower_bound(t.row_idx.begin(), t.row_idx.end(), static_cast<I>(lo)) - t.row_idx.begin();
    std::array<V, tile> sum;
    for (std::int64_t r0 = lo; r0 < hi; r0 += tile) {
      const std::int64_t r1 = std::min(hi, r0 + tile);
      std::fill_n(sum.begin(), r1 - r0, V(0));
      // ELL part (sec. 5.2.2), slot by slot; padding slots (column -1) are skipped.
      for (std::int64_t k = 0; k < w; ++k) {
        const I* col = ell_col + k * rows;
        const V* val = ell_val + k * rows;
        for (std::int64_t r = r0; r < r1; ++r)
          if (col[r] != ell_padding) sum[r - r0] += val[r] * x[col[r]];
      }
      // COO tail (sec. 5.2.3), grouped by row: continues each row's sum after its ELL slots.
      for (std::int64_t r = r0; r < r1; ++r) {
        V s = sum[r - r0];
        for (; c < tail && t.row_idx[c] == r; ++c) s += t.values[c] * x[t.col_idx[c]];
        // beta == 0 must not read y (it may hold NaN or be uninitialised), as in BLAS.
        y[r] = beta == V(0) ? alpha * s : alpha * s + beta * y[r];
      }
    }
  });
}

#define SPCONV_INST(V) template void spmv<V>(const hyb<V>&, V, const V*, V, V*);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
