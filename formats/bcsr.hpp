// BCSR (blocked CSR): the matrix cut into a grid of r x c dense blocks; the blocks that
// hold at least one entry are stored CSR-like per block row (block_ptr, block_col) and
// their r*c values row-major, with explicit +0.0 fill for the positions the source does
// not hold (liu-thesis-csr5.txt sec. 5.4.4, fig. 5.13; mbr-kannan.txt sec. II, fig. 2).
//
// Exactness: fill is +0.0 (all bits zero). A source entry whose bits are also +0.0 would
// be indistinguishable from fill, so its position within `values` is listed in
// `stored_zeros` (sorted; empty for most matrices). -0.0, NaN and every other value differ
// from fill in their bits and need no entry. See specs/formats/bcsr.md.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "formats/format.hpp"

namespace spconv {

// Rows and columns of one block. Stored values are always in [1, bcsr_max_block];
// in a conversion request 0 means "choose automatically" (cpu::resolve_bcsr_params).
struct bcsr_params {
  std::int32_t block_rows = 0;  // r: rows of one block
  std::int32_t block_cols = 0;  // c: columns of one block

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("block_rows", p.block_rows);
    f("block_cols", p.block_cols);
  }
};

// Largest block side: 16 keeps a block row's accumulators in registers in the SpMV and
// bounds the fill of one entry to 255 zeros.
inline constexpr std::int32_t bcsr_max_block = 16;

// The most values a BCSR of a matrix with `nnz` entries and `rows` rows may store:
// min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20). The first bound keeps positions in values
// 32-bit; the second is the container's cap on any array length (specs/container.md), so
// every valid BCSR can be written and read back. Conversions refuse larger fill.
inline std::int64_t bcsr_max_values(std::int64_t nnz, std::int64_t rows) {
  return std::min<std::int64_t>(std::numeric_limits<std::int32_t>::max(), container_array_cap(nnz, rows));
}

namespace bcsr_detail {
// True when v has the bits of the fill value, +0.0 (v == 0 holds for -0.0 too, so the
// sign decides; NaN compares unequal to 0 and is never fill).
template <class V>
bool is_fill(V v) {
  return v == V(0) && !std::signbit(v);
}
}  // namespace bcsr_detail

template <class V, class I = std::int32_t, class Space = host>
struct bcsr {
  static_assert(std::is_same_v<I, std::int32_t>, "bcsr uses 32-bit indices and offsets");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = bcsr_params;
  static constexpr std::string_view name = "bcsr";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  bcsr_params params;
  array<I, Space> block_ptr;     // ceil(rows / r) + 1 offsets into block_col
  array<I, Space> block_col;     // nblocks block-column indices, increasing within a block row
  array<V, Space> values;        // nblocks * r * c values, block after block, row-major inside
  array<I, Space> stored_zeros;  // increasing positions in values of entries whose bits are +0.0

  // Entries of the source matrix: the values that are not fill plus the stored +0.0 ones.
  // Counted from the arrays (a pass over values), so it never disagrees with them.
  std::int64_t nnz() const {
    std::int64_t n = static_cast<std::int64_t>(stored_zeros.size());
    for (const V& v : values) n += bcsr_detail::is_fill(v) ? 0 : 1;
    return n;
  }

  // SpMV does not read stored_zeros (it is for the round trip to CSR only).
  static constexpr std::array<std::string_view, 1> spmv_skips = {"stored_zeros"};

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("block_ptr", m.block_ptr);
    f("block_col", m.block_col);
    f("values", m.values);
    f("stored_zeros", m.stored_zeros);
  }
};

// Throws errc::bad_input naming the broken invariant (block size, lengths, pointers, block
// columns, stored_zeros, padding outside the matrix, blocks without an entry, fill beyond
// bcsr_max_values).
template <class V, class I>
void validate(const bcsr<V, I, host>& m);

// Stored values per matrix entry: values.size() / nnz() (1.0 for a matrix without entries,
// which stores no values). 1.0 means no fill; r * c is the worst case.
template <class V>
double fill_ratio(const bcsr<V>& m);

}  // namespace spconv
