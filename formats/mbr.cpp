// validate() for MBR: every invariant of specs/formats/mbr.md, lengths checked before
// anything is indexed, since it guards files from untrusted sources.
#include "formats/mbr.hpp"

#include <bit>
#include <limits>

#include "formats/instantiate.hpp"

namespace spconv {

namespace {

// Bits i*c + j for i < rr, j < cc: the positions of an r x c block that lie inside the
// matrix when only rr rows and cc columns of it do.
std::uint64_t inside_mask(int rr, int cc, int c) {
  const std::uint64_t row = cc >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << cc) - 1;
  std::uint64_t m = 0;
  for (int i = 0; i < rr; ++i) m |= row << (i * c);
  return m;
}

std::string hex(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

}  // namespace

template <class V, class I>
void validate(const mbr<V, I, host>& m) {
  constexpr std::string_view n = "mbr";
  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());

  const std::int64_t r = m.params.block_rows, c = m.params.block_cols;
  if (r < 1 || c < 1)
    invalid(n, "block size " + std::to_string(r) + " x " + std::to_string(c) +
                   " (block_rows, block_cols must be >= 1)");
  if (r * c > 64)
    invalid(n, "block size " + std::to_string(r) + " x " + std::to_string(c) + " has " + std::to_string(r * c) +
                   " positions, more than the 64 bits a bitmap holds");
  const int w = mbr_bitmap_bytes(r * c);
  if (m.params.bitmap_bytes != w)
    invalid(n, "bitmap_bytes = " + std::to_string(m.params.bitmap_bytes) + " but " + std::to_string(r) + " x " +
                   std::to_string(c) + " blocks need " + std::to_string(w));

  const std::int64_t block_rows = (m.rows + r - 1) / r, block_cols = (m.cols + c - 1) / c;
  check_length(n, "block_row_ptr", m.block_row_ptr, static_cast<std::size_t>(block_rows) + 1);
  check_pointers(n, "block_row_ptr", m.block_row_ptr, static_cast<std::int64_t>(m.block_col_idx.size()));
  const std::size_t blocks = m.block_col_idx.size();
  if (m.bitmaps.size() != blocks * static_cast<std::size_t>(w))
    invalid(n, "bitmaps has " + std::to_string(m.bitmaps.size()) + " bytes, expected " + std::to_string(blocks) +
                   " blocks x " + std::to_string(w) + " bitmap_bytes = " + std::to_string(blocks * w));
  check_length(n, "value_ptr", m.value_ptr, static_cast<std::size_t>(block_rows) + 1);
  check_pointers(n, "value_ptr", m.value_ptr, static_cast<std::int64_t>(m.values.size()));
  check_indices(n, "block_col_idx", m.block_col_idx, block_cols);

  const std::uint64_t full = inside_mask(static_cast<int>(r), static_cast<int>(c), static_cast<int>(c));
  for (std::int64_t br = 0; br < block_rows; ++br) {
    const int rr = static_cast<int>(std::min(r, m.rows - br * r));
    std::int64_t set = 0;
    for (I b = m.block_row_ptr[br]; b < m.block_row_ptr[br + 1]; ++b) {
      if (b > m.block_row_ptr[br] && m.block_col_idx[b] <= m.block_col_idx[b - 1])
        invalid(n, "block row " + std::to_string(br) + " is not sorted or has a duplicate: block_col_idx[" +
                       std::to_string(b - 1) + "] = " + std::to_string(m.block_col_idx[b - 1]) + ", block_col_idx[" +
                       std::to_string(b) + "] = " + std::to_string(m.block_col_idx[b]));
      const std::uint64_t map = mbr_load_bitmap(m.bitmaps.data() + static_cast<std::size_t>(b) * w, w);
      // Empty blocks are never stored (sec. III stores the non-zero blocks only), so a
      // zero bitmap is a corrupt file, not a choice.
      if (map == 0) invalid(n, "bitmap of block " + std::to_string(b) + " (block row " + std::to_string(br) + ") is 0");
      if (map & ~full)
        invalid(n, "bitmap of block " + std::to_string(b) + " = " + hex(map) + " sets bits beyond the " +
                       std::to_string(r * c) + " positions of a " + std::to_string(r) + " x " + std::to_string(c) +
                       " block");
      const int cc = static_cast<int>(std::min(c, m.cols - static_cast<std::int64_t>(m.block_col_idx[b]) * c));
      if ((rr < r || cc < c) && (map & ~inside_mask(rr, cc, static_cast<int>(c))))
        invalid(n, "bitmap of block " + std::to_string(b) + " = " + hex(map) + " marks positions beyond the " +
                       "matrix edge (block row " + std::to_string(br) + " has " + std::to_string(rr) +
                       " rows inside, block column " + std::to_string(m.block_col_idx[b]) + " has " +
                       std::to_string(cc) + " columns inside)");
      set += std::popcount(map);
    }
    const std::int64_t stored = static_cast<std::int64_t>(m.value_ptr[br + 1]) - m.value_ptr[br];
    if (set != stored)
      invalid(n, "block row " + std::to_string(br) + ": bitmaps mark " + std::to_string(set) +
                     " entries but value_ptr gives it " + std::to_string(stored) + " values");
  }
}

#define SPCONV_INST(V) template void validate<V, std::int32_t>(const mbr<V, std::int32_t, host>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
