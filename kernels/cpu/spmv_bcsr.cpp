// BCSR SpMV: the block row kernel is written once with the block size as template
// parameters (0 = read at run time). Common sizes get compile-time instances, so that
// the loops over one block unroll and the r sums and c elements of x stay in registers
// (mbr-kannan.txt sec. II, fig. 2: "the inner loop ... is fully unrolled"); any other
// size runs the same loops with run-time bounds.
#include "kernels/cpu/spmv_bcsr.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

template <class V>
using block_rows_fn = void (*)(const bcsr<V>&, V, const V*, V, V*, std::int64_t, std::int64_t);

// y rows of block rows [br0, br1).
template <class V, int R, int C>
void block_rows(const bcsr<V>& a, V alpha, const V* x, V beta, V* y, std::int64_t br0, std::int64_t br1) {
  const std::int64_t r = R ? R : a.params.block_rows, c = C ? C : a.params.block_cols, rc = r * c;
  constexpr int r_cap = R ? R : bcsr_max_block, c_cap = C ? C : bcsr_max_block;
  const V* values = a.values.data();
  for (std::int64_t br = br0; br < br1; ++br) {
    std::array<V, r_cap> sum{};
    for (std::int32_t k = a.block_ptr[br]; k < a.block_ptr[br + 1]; ++k) {
      const V* blk = values + k * rc;
      const std::int64_t col0 = std::int64_t{a.block_col[k]} * c;
      // The last block column may overhang the matrix: x has no element there, and the
      // padding values are 0, so a 0 in place of x keeps the block loop uniform.
      const std::int64_t w = std::min(c, a.cols - col0);
      std::array<V, c_cap> xb;
      for (std::int64_t j = 0; j < c; ++j) xb[j] = j < w ? x[col0 + j] : V(0);
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t j = 0; j < c; ++j) sum[i] += blk[i * c + j] * xb[j];
    }
    // The last block row may overhang the matrix: its padding rows are not written.
    const std::int64_t row0 = br * r, h = std::min(r, a.rows - row0);
    for (std::int64_t i = 0; i < h; ++i)
      // beta == 0 must not read y (it may hold NaN or be uninitialised), as in BLAS.
      y[row0 + i] = beta == V(0) ? alpha * sum[i] : alpha * sum[i] + beta * y[row0 + i];
  }
}

template <class V, int R>
block_rows_fn<V> pick_cols(int c) {
  switch (c) {
    case 1: return &block_rows<V, R, 1>;
    case 2: return &block_rows<V, R, 2>;
    case 4: return &block_rows<V, R, 4>;
    case 8: return &block_rows<V, R, 8>;
    default: return &block_rows<V, 0, 0>;
  }
}

// Compile-time sizes: r, c in {1, 2, 4, 8}, plus the squares 3 x 3 and 6 x 6 that the
// automatic rule also picks (3 and 6 degrees of freedom per node in FEM matrices).
template <class V>
block_rows_fn<V> pick(int r, int c) {
  if (r == 3 && c == 3) return &block_rows<V, 3, 3>;
  if (r == 6 && c == 6) return &block_rows<V, 6, 6>;
  switch (r) {
    case 1: return pick_cols<V, 1>(c);
    case 2: return pick_cols<V, 2>(c);
    case 4: return pick_cols<V, 4>(c);
    case 8: return pick_cols<V, 8>(c);
    default: return &block_rows<V, 0, 0>;
  }
}

}  // namespace

template <class V>
void spmv(const bcsr<V>& a, V alpha, const V* x, V beta, V* y) {
  const block_rows_fn<V> kernel = pick<V>(a.params.block_rows, a.params.block_cols);
  const std::int64_t mb = static_cast<std::int64_t>(a.block_ptr.size()) - 1;
  const std::int64_t grain = std::max<std::int64_t>(1, 4096 / a.params.block_rows);
  parallel_for(mb, grain, [&](std::int64_t lo, std::int64_t hi) { kernel(a, alpha, x, beta, y, lo, hi); });
}

#define SPCONV_INST(V) template void spmv<V>(const bcsr<V>&, V, const V*, V, V*);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
