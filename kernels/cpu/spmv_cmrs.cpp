// CMRS SpMV on the CPU (shared/papers/cmrs-koza.txt sec. 4, Algorithm 1; appendix 9-10).
// One strip at a time, as one warp of the GPU kernels would process it: slot s of a strip
// starting at slot b belongs to lane (s - b) % 32, which adds value * x[column] into the
// buffer cell buf[lane % modulo][row in strip] (modulo = 32: Algorithm 1's buf[lane][r];
// modulo < 32: the modified kernel of appendix 10, whose layout (sec. 6.7) guarantees that
// the lanes of one 32-slot step never share a cell). The buffer columns are then summed
// by the kernels' halving tree (step 16, 8, 4, 2, 1: buf[l] += buf[l + step]) and the
// strip's `height` row sums written out. Walking slots in order applies each cell's
// additions in the GPU's order, so a GPU kernel that does not contract to FMA reproduces
// these sums bit for bit. Padding slots (+0.0) are processed like entries, as on the GPU.
// Strips go to threads in contiguous blocks; each strip is summed by one thread, so the
// result does not depend on the thread count.
#include "kernels/cpu/spmv_cmrs.hpp"

#include <algorithm>
#include <array>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
void spmv(const cmrs<V>& a, V alpha, const V* x, V beta, V* y) {
  const int h = a.params.height, modulo = a.params.modulo;
  const std::int64_t strips = cmrs_strips(a.rows, h);
  parallel_for(strips, 1 << 10, [&](std::int64_t j0, std::int64_t j1) {
    std::array<std::array<V, cmrs_max_height>, cmrs_warp> buf;  // [lane % modulo][row in strip]
    for (std::int64_t j = j0; j < j1; ++j) {
      for (int l = 0; l < modulo; ++l) std::fill_n(buf[l].begin(), h, V(0));
      const std::int64_t b = a.strip_ptr[j], e = a.strip_ptr[j + 1];
      for (std::int64_t s = b; s < e; ++s) {
        const std::uint32_t w = a.col_row[s];
        buf[(s - b) % modulo][cmrs_row(w)] += a.values[s] * x[cmrs_col(w)];
      }
      for (int step = modulo / 2; step >= 1; step /= 2)
        for (int l = 0; l < step; ++l)
          for (int r = 0; r < h; ++r) buf[l][r] += buf[l + step][r];
      const std::int64_t r0 = j * h, here = std::min<std::int64_t>(h, a.rows - r0);
      for (std::int64_t r = 0; r < here; ++r)
        // beta == 0 must not read y, as in BLAS.
        y[r0 + r] = beta == V(0) ? alpha * buf[0][r] : alpha * buf[0][r] + beta * y[r0 + r];
    }
  });
}

#define SPCONV_INST(V) template void spmv<V>(const cmrs<V>&, V, const V*, V, V*);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
