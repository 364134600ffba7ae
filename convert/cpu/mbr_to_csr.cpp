// MBR -> CSR on the CPU (shared/papers/mbr-kannan.txt sec. III).
// Blocks of a block row are stored in increasing block column and bits run row-major
// inside a block, so the entries of one matrix row come out in increasing column: each
// row is already canonical. Pass 1 counts every row's entries (set bits of its slice of
// each bitmap), pass 2 scatters columns and values to the row cursors; both are parallel
// over block rows and write disjoint rows, so the result does not depend on threads.
#include <algorithm>
#include <array>
#include <bit>

#include "convert/cpu/mbr.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

namespace {
using I = std::int32_t;
}  // namespace

template <class V>
csr<V, I> mbr_to_csr(const mbr<V>& a) {
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  const std::int64_t grain = std::max(1, (1 << 12) / r);
  const mbr_bit_positions pos(r, c);
  auto rows_in = [&](std::int64_t br) { return static_cast<int>(std::min<std::int64_t>(r, a.rows - br * r)); };
  auto bitmap = [&](I b) { return mbr_load_bitmap(a.bitmaps.data() + static_cast<std::size_t>(b) * w, w); };

  csr<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  out.row_ptr[0] = 0;
  parallel_for(block_rows, grain, [&](std::int64_t br0, std::int64_t br1) {
    for (std::int64_t br = br0; br < br1; ++br) {
      std::array<I, 64> len{};
      for (I b = a.block_row_ptr[br]; b < a.block_row_ptr[br + 1]; ++b)
        for (std::uint64_t map = bitmap(b); map; map &= map - 1) ++len[pos.row[std::countr_zero(map)]];
      for (int i = 0; i < rows_in(br); ++i) out.row_ptr[br * r + i + 1] = len[i];
    }
  });
  // Row lengths sum to nnz, which fits I (value_ptr holds it): no overflow.
  for (std::int64_t row = 0; row < a.rows; ++row) out.row_ptr[row + 1] += out.row_ptr[row];

  out.col_idx.resize(a.nnz());
  out.values.resize(a.nnz());
  parallel_for(block_rows, grain, [&](std::int64_t br0, std::int64_t br1) {
    for (std::int64_t br = br0; br < br1; ++br) {
      std::array<I, 64> next;
      for (int i = 0; i < rows_in(br); ++i) next[i] = out.row_ptr[br * r + i];
      I v = a.value_ptr[br];
      for (I b = a.block_row_ptr[br]; b < a.block_row_ptr[br + 1]; ++b) {
        const I base = a.block_col_idx[b] * c;
        for (std::uint64_t map = bitmap(b); map; map &= map - 1) {
          const int p = std::countr_zero(map);
          const I k = next[pos.row[p]]++;
          out.col_idx[k] = base + pos.col[p];
          out.values[k] = a.values[v++];
        }
      }
    }
  });
  return out;
}

#define SPCONV_INST(V) template csr<V, I> mbr_to_csr<V>(const mbr<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
