// BCSR invariants (specs/formats/bcsr.md). validate() guards loading of untrusted files,
// so every length is checked before the array is indexed and every product is formed in
// 64 bits.
#include "formats/bcsr.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "formats/instantiate.hpp"

namespace spconv {

template <class V, class I>
void validate(const bcsr<V, I, host>& m) {
  constexpr std::string_view n = "bcsr";
  using bcsr_detail::is_fill;
  const std::int64_t r = m.params.block_rows, c = m.params.block_cols;
  const std::string range = " is out of range [1, " + std::to_string(bcsr_max_block) + "]";
  if (r < 1 || r > bcsr_max_block) invalid(n, "block_rows = " + std::to_string(r) + range);
  if (c < 1 || c > bcsr_max_block) invalid(n, "block_cols = " + std::to_string(c) + range);
  check_shape(n, m.rows, m.cols, std::numeric_limits<I>::max());

  const std::int64_t block_rows = (m.rows + r - 1) / r, block_cols = (m.cols + c - 1) / c;
  check_length(n, "block_ptr", m.block_ptr, static_cast<std::size_t>(block_rows) + 1);
  check_pointers(n, "block_ptr", m.block_ptr, static_cast<std::int64_t>(m.block_col.size()));
  const std::int64_t nblocks = static_cast<std::int64_t>(m.block_col.size()), rc = r * c;
  if (nblocks * rc > std::numeric_limits<I>::max())
    invalid(n, std::to_string(nblocks) + " blocks of " + std::to_string(r) + " x " + std::to_string(c) + " need " +
                   std::to_string(nblocks * rc) + " values, beyond the 32-bit offset limit " +
                   std::to_string(std::numeric_limits<I>::max()));
  check_length(n, "values", m.values, static_cast<std::size_t>(nblocks * rc));
  check_indices(n, "block_col", m.block_col, block_cols);
  for (std::int64_t br = 0; br < block_rows; ++br)
    for (I k = m.block_ptr[br] + 1; k < m.block_ptr[br + 1]; ++k)
      if (m.block_col[k] <= m.block_col[k - 1])
        invalid(n, "block row " + std::to_string(br) + " is not sorted or has a duplicate: block_col[" +
                       std::to_string(k - 1) + "] = " + std::to_string(m.block_col[k - 1]) + ", block_col[" +
                       std::to_string(k) + "] = " + std::to_string(m.block_col[k]));

  const auto& z = m.stored_zeros;
  check_indices(n, "stored_zeros", z, static_cast<std::int64_t>(m.values.size()));
  for (std::size_t i = 0; i < z.size(); ++i) {
    if (i > 0 && z[i] <= z[i - 1])
      invalid(n, "stored_zeros is not increasing at " + std::to_string(i) + ": " + std::to_string(z[i - 1]) + " then " +
                     std::to_string(z[i]));
    if (!is_fill(m.values[z[i]]))
      invalid(n, "stored_zeros[" + std::to_string(i) + "] = " + std::to_string(z[i]) + " points to values[" +
                     std::to_string(z[i]) + "] = " + std::to_string(m.values[z[i]]) + ", which is not +0.0");
  }

  // Per block: positions outside the matrix (the last block row and block column overhang
  // when r or c does not divide the shape) are padding and must be +0.0 and not stored;
  // every block holds at least one entry, so the blocks are exactly those the source needs.
  std::size_t zi = 0;  // cursor into stored_zeros, which is sorted like the blocks
  for (std::int64_t br = 0; br < block_rows; ++br) {
    const std::int64_t h = std::min(r, m.rows - br * r);
    for (I k = m.block_ptr[br]; k < m.block_ptr[br + 1]; ++k) {
      const std::int64_t bc = m.block_col[k], w = std::min(c, m.cols - bc * c), base = k * rc;
      bool has_entry = false;
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t j = 0; j < c; ++j) {
          const V v = m.values[base + i * c + j];
          if (i < h && j < w) {
            has_entry = has_entry || !is_fill(v);
          } else if (!is_fill(v)) {
            invalid(n, "values[" + std::to_string(base + i * c + j) + "] = " + std::to_string(v) +
                           " is padding outside the matrix (row " + std::to_string(br * r + i) + ", column " +
                           std::to_string(bc * c + j) + ") and must be +0.0");
          }
        }
      for (; zi < z.size() && z[zi] < base + rc; ++zi) {
        const std::int64_t i = (z[zi] - base) / c, j = (z[zi] - base) % c;
        if (i >= h || j >= w)
          invalid(n, "stored_zeros[" + std::to_string(zi) + "] = " + std::to_string(z[zi]) +
                         " is padding outside the matrix (row " + std::to_string(br * r + i) + ", column " +
                         std::to_string(bc * c + j) + "), not an entry");
        has_entry = true;
      }
      if (!has_entry)
        invalid(n, "block " + std::to_string(k) + " (block row " + std::to_string(br) + ", block column " +
                       std::to_string(bc) + ") holds no entry, only fill");
    }
  }

  // The fill a conversion would refuse (beyond the container cap) is refused here too.
  const std::int64_t nnz = m.nnz(), limit = bcsr_max_values(nnz, m.rows);
  if (static_cast<std::int64_t>(m.values.size()) > limit)
    invalid(n, "values has " + std::to_string(m.values.size()) + " elements for " + std::to_string(nnz) +
                   " entries, beyond the limit of " + std::to_string(limit) +
                   " values (min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20))");
}

template <class V>
double fill_ratio(const bcsr<V>& m) {
  const std::int64_t nnz = m.nnz();
  return nnz == 0 ? 1.0 : static_cast<double>(m.values.size()) / static_cast<double>(nnz);
}

#define SPCONV_INST(V)                                                         \
  template void validate<V, std::int32_t>(const bcsr<V, std::int32_t, host>&); \
  template double fill_ratio<V>(const bcsr<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv
