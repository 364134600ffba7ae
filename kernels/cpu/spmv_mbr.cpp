// MBR SpMV and SMMV (shared/papers/mbr-kannan.txt sec. IV, Fig. 3-6).
// Per block row: clear r x K accumulators, then for each block load its bitmap once as an
// unsigned word of the bitmap's width and visit only its set bits (sec. IV-A: z_b
// iterations per block instead of r*c conditionals). Each set bit gives the row and
// column inside the block (table lookup) and consumes the next value. For several
// vectors (sec. IV-B) the work per decoded bit is K multiply-adds with K a compile-time
// constant, so the inner loop is unrolled; k vectors are taken in chunks of at most 8.
// Threads take contiguous ranges of block rows (value_ptr says where each block row's
// values start) and each output row is summed in the stored order, so results do not
// depend on the thread count.
#include "kernels/cpu/spmv_mbr.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <type_traits>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

namespace {

using I = std::int32_t;

// Vectors handled per pass over the matrix: up to 8, the range where the paper's SMMV
// peaks on CPUs with small caches (sec. V-A: 5-6 on the Core i7, 12-16 on the Opteron).
constexpr int max_chunk = 8;

// Y[:, j0 : j0+K] = alpha * A[block rows br0..br1) * X[:, j0 : j0+K] + beta * Y[...],
// X and Y row-major with leading dimension ld. M is the bitmap's unsigned type.
template <class M, int K, class V>
void block_rows_times(const mbr<V>& a, const mbr_bit_positions& pos, std::int64_t br0, std::int64_t br1,
                      std::int64_t ld, std::int64_t j0, V alpha, const V* x, V beta, V* y) {
  const int r = a.params.block_rows, c = a.params.block_cols;
  std::array<V, 64 * K> acc;
  for (std::int64_t br = br0; br < br1; ++br) {
    const int rr = static_cast<int>(std::min<std::int64_t>(r, a.rows - br * r));
    std::fill_n(acc.begin(), rr * K, V(0));
    I v = a.value_ptr[br];
    for (I b = a.block_row_ptr[br]; b < a.block_row_ptr[br + 1]; ++b) {
      const V* xb = x + static_cast<std::int64_t>(a.block_col_idx[b]) * c * ld + j0;
      // Lowest set bit first (std::countr_zero, the instruction that does what the
      // paper's de Bruijn multiply-and-lookup does), then clear it: the loop test is the
      // only conditional per entry (sec. IV-A, Fig. 5).
      for (M map = mbr_load_bitmap<M>(a.bitmaps.data() + static_cast<std::size_t>(b) * sizeof(M)); map;
           map = static_cast<M>(map & (map - 1))) {
        const int p = std::countr_zero(map);
        const V val = a.values[v++];
        const V* xp = xb + pos.col[p] * ld;
        V* ap = acc.data() + pos.row[p] * K;
        for (int l = 0; l < K; ++l) ap[l] += val * xp[l];
      }
    }
    V* yb = y + br * r * ld + j0;
    for (int i = 0; i < rr; ++i)
      for (int l = 0; l < K; ++l) {
        V& out = yb[i * ld + l];
        // beta == 0 must not read y (it may hold NaN or be uninitialised), as in BLAS.
        out = beta == V(0) ? alpha * acc[i * K + l] : alpha * acc[i * K + l] + beta * out;
      }
  }
}

template <class M, class V>
void product(const mbr<V>& a, int k, V alpha, const V* x, V beta, V* y) {
  const int r = a.params.block_rows;
  const mbr_bit_positions pos(r, a.params.block_cols);
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  parallel_for(block_rows, std::max(1, (1 << 12) / r), [&](std::int64_t br0, std::int64_t br1) {
    for (int j0 = 0; j0 < k; j0 += max_chunk) {
      auto run = [&](auto chunk) {
        block_rows_times<M, decltype(chunk)::value>(a, pos, br0, br1, k, j0, alpha, x, beta, y);
      };
      switch (std::min(max_chunk, k - j0)) {
        case 1: run(std::integral_constant<int, 1>{}); break;
        case 2: run(std::integral_constant<int, 2>{}); break;
        case 3: run(std::integral_constant<int, 3>{}); break;
        case 4: run(std::integral_constant<int, 4>{}); break;
        case 5: run(std::integral_constant<int, 5>{}); break;
        case 6: run(std::integral_constant<int, 6>{}); break;
        case 7: run(std::integral_constant<int, 7>{}); break;
        default: run(std::integral_constant<int, 8>{}); break;
      }
    }
  });
}

}  // namespace

template <class V>
void spmm(const mbr<V>& a, int k, V alpha, const V* x, V beta, V* y) {
  if (k < 1) fail(errc::usage, "mbr spmm: k = " + std::to_string(k) + " vectors (needs k >= 1)");
  // One dispatch per call on the bitmap width, so that the inner loop reads and scans a
  // word of the bitmap's own type (sec. III: the maptype fits the block size).
  switch (a.params.bitmap_bytes) {
    case 1: product<std::uint8_t>(a, k, alpha, x, beta, y); break;
    case 2: product<std::uint16_t>(a, k, alpha, x, beta, y); break;
    case 4: product<std::uint32_t>(a, k, alpha, x, beta, y); break;
    case 8: product<std::uint64_t>(a, k, alpha, x, beta, y); break;
    default:
      fail(errc::bad_input, "mbr: bitmap_bytes = " + std::to_string(a.params.bitmap_bytes) +
                                " is not 1, 2, 4 or 8 (validate() the matrix)");
  }
}

template <class V>
void spmv(const mbr<V>& a, V alpha, const V* x, V beta, V* y) {
  spmm(a, 1, alpha, x, beta, y);
}

#define SPCONV_INST(V)                                                    \
  template void spmv<V>(const mbr<V>&, V, const V*, V, V*);             \
  template void spmm<V>(const mbr<V>&, int, V, const V*, V, V*);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
