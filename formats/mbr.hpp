// MBR, Mapped Blocked Row (Kannan, shared/papers/mbr-kannan.txt sec. III): the matrix is
// cut into r x c blocks, stored CSR-like by block row; each non-empty block keeps its
// block column, a bitmap of which of its r*c positions hold a stored entry, and only the
// values of those entries. Unlike BCSR there is no fill: a block costs one index and one
// bitmap, never r*c values.
//
// Bitmap convention (sec. III): bit p = i*c + j marks row i, column j of the block (bit 0 =
// top left, row-major inside the block). The paper picks the bitmap type to fit r*c bits
// ("8x5 needs 40 bits, an __int64"); spconv stores bitmaps as bytes, bitmap_bytes each
// (the smallest of 1, 2, 4, 8 holding r*c bits), little-endian, so that one array type
// serves every block size while kernels still read one unsigned word per block.
//
// value_ptr (one offset per block row into values) is spconv's addition: the paper's
// kernels walk values sequentially (sec. IV, Alg. 3 "increment val"), which makes block
// rows depend on all earlier ones. Storing where each block row's values start lets
// threads (and later GPU blocks) take block rows independently at the cost of n/r words,
// the same as block_row_ptr. spec: specs/formats/mbr.md.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "formats/format.hpp"

namespace spconv {

struct mbr_params {
  std::int32_t block_rows = 0;    // r, >= 1 (0 in a request: automatic)
  std::int32_t block_cols = 0;    // c, >= 1, r*c <= 64 (0 in a request: automatic)
  std::int32_t bitmap_bytes = 0;  // derived from r*c: 1, 2, 4 or 8 (0 in a request: derive)

  template <class Self, class F>
  static void for_each_param(Self& p, F&& f) {
    f("block_rows", p.block_rows);
    f("block_cols", p.block_cols);
    f("bitmap_bytes", p.bitmap_bytes);
  }
};

// Bytes of the smallest unsigned type holding `bits` bitmap bits (1..64); 0 when more
// than 64 bits are asked for (the format's limit: built-in types up to 8x8, sec. III).
constexpr int mbr_bitmap_bytes(std::int64_t bits) {
  return bits <= 0 ? 0 : bits <= 8 ? 1 : bits <= 16 ? 2 : bits <= 32 ? 4 : bits <= 64 ? 8 : 0;
}

// Reads one little-endian bitmap of sizeof(M) bytes. Assembling from bytes keeps it
// independent of the host's byte order and alignment; compilers turn it into one load.
template <class M>
inline M mbr_load_bitmap(const std::uint8_t* p) {
  static_assert(std::is_unsigned_v<M>);
  M m = 0;
  for (std::size_t b = 0; b < sizeof(M); ++b) m = static_cast<M>(m | (static_cast<M>(p[b]) << (8 * b)));
  return m;
}

// The same for a width known only at run time (validation, conversion).
inline std::uint64_t mbr_load_bitmap(const std::uint8_t* p, int bytes) {
  std::uint64_t m = 0;
  for (int b = 0; b < bytes; ++b) m |= static_cast<std::uint64_t>(p[b]) << (8 * b);
  return m;
}

// Row i and column j inside the block of each bit position p = i*c + j: one table lookup
// per set bit instead of the division and remainder that sec. IV flags as costly.
struct mbr_bit_positions {
  std::array<std::uint8_t, 64> row{}, col{};
  mbr_bit_positions(int r, int c) {
    for (int p = 0; p < r * c; ++p) {
      row[p] = static_cast<std::uint8_t>(p / c);
      col[p] = static_cast<std::uint8_t>(p % c);
    }
  }
};

template <class V, class I = std::int32_t, class Space = host>
struct mbr {
  static_assert(std::is_same_v<I, std::int32_t>, "mbr is instantiated for 32-bit indices only");
  using value_type = V;
  using index_type = I;
  using space = Space;
  using params_type = mbr_params;
  static constexpr std::string_view name = "mbr";
  static constexpr int version = 1;

  std::int64_t rows = 0, cols = 0;
  mbr_params params;
  array<I, Space> block_row_ptr;           // ceil(rows/r) + 1 offsets into block_col_idx (blocks)
  array<I, Space> block_col_idx;           // one per block, strictly increasing in a block row
  array<std::uint8_t, Space> bitmaps;      // bitmap_bytes per block, little-endian
  array<I, Space> value_ptr;               // ceil(rows/r) + 1 offsets into values
  array<V, Space> values;                  // the stored entries, block by block, in set-bit order

  std::int64_t nnz() const { return static_cast<std::int64_t>(values.size()); }

  template <class Self, class F>
  static void for_each_array(Self& m, F&& f) {
    f("block_row_ptr", m.block_row_ptr);
    f("block_col_idx", m.block_col_idx);
    f("bitmaps", m.bitmaps);
    f("value_ptr", m.value_ptr);
    f("values", m.values);
  }
};

// Throws errc::bad_input naming the broken invariant (see specs/formats/mbr.md).
template <class V, class I>
void validate(const mbr<V, I, host>& m);

}  // namespace spconv
