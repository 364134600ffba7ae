// CCOO -> CSR (specs/formats/ccoo.md). Each chunk's stored entries (the entries its pad
// bitmap does not mark) land at a prefix-summed offset; a row's end is written by the
// chunk holding the row's last group, so chunks decode in parallel without sharing.
#include <algorithm>
#include <bit>
#include <cstring>

#include "convert/cpu/ccoo.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
csr<V, std::int32_t> ccoo_to_csr(const ccoo<V>& a) {
  using I = std::int32_t;
  csr<V, I> out;
  out.rows = a.rows;
  out.cols = a.cols;
  const std::int64_t chunks = static_cast<std::int64_t>(a.chunk_format.size());
  const std::int64_t nb = a.params.chunk_b, nk = a.params.chunk_k, entries = a.entries();
  out.row_ptr.resize(a.rows + 1);
  out.col_idx.resize(a.nnz());
  out.values.resize(a.nnz());
  if (chunks == 0) {
    std::fill(out.row_ptr.begin(), out.row_ptr.end(), I{0});
    return out;
  }
  auto chunk_entries = [&](std::int64_t c) { return std::min(nb * nk, entries - c * nb * nk); };

  // Where each chunk's stored entries start: entries minus the marked padding, scanned.
  array<std::int64_t> start(chunks + 1);
  parallel_for(chunks, 64, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::uint8_t code = a.chunk_format[c];
      const std::int64_t e_count = chunk_entries(c);
      std::int64_t kept = e_count;
      if (code & ccoo_code::pads) {
        const ccoo_layout l = ccoo_chunk_layout(e_count, static_cast<std::int32_t>(nk), code, sizeof(V));
        const std::uint8_t* bitmap = a.blob.data() + a.chunk_ptr[c] + l.pads;
        for (std::int64_t i = 0; i < (e_count + 7) / 8; ++i) kept -= std::popcount(bitmap[i]);
      }
      start[c + 1] = kept;
    }
  });
  start[0] = 0;
  for (std::int64_t c = 0; c < chunks; ++c) start[c + 1] += start[c];

  out.row_ptr[0] = 0;
  parallel_for(chunks, 16, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::uint8_t code = a.chunk_format[c];
      const std::int64_t e_count = chunk_entries(c);
      const ccoo_layout l = ccoo_chunk_layout(e_count, static_cast<std::int32_t>(nk), code, sizeof(V));
      const std::uint8_t* p = a.blob.data() + a.chunk_ptr[c];
      const std::uint8_t* roff = (code & ccoo_code::single_row) ? nullptr : p + l.rows;
      const std::uint8_t* bitmap = (code & ccoo_code::pads) ? p + l.pads : nullptr;
      const bool lut = code & ccoo_code::lut;
      const std::int64_t base_row = a.chunk_row[c], base_col = a.chunk_col[c];
      std::int64_t pos = start[c], row = base_row;
      for (std::int64_t e = 0; e < e_count; ++e) {
        if (roff && e % nk == 0 && base_row + roff[e / nk] != row) {
          // Rows advance by one: every row holds at least one group.
          out.row_ptr[row + 1] = static_cast<I>(pos);
          row = base_row + roff[e / nk];
        }
        if (ccoo_is_pad(bitmap, e)) continue;
        out.col_idx[pos] = static_cast<I>(base_col + ccoo_col_offset(p + l.cols, l.col_bytes, e));
        out.values[pos] = lut ? a.table[p[l.values + e]] : ccoo_load<V>(p + l.values + e * sizeof(V));
        ++pos;
      }
      // The last row ends here unless the next chunk continues it.
      if (c + 1 == chunks || a.chunk_row[c + 1] != row) out.row_ptr[row + 1] = static_cast<I>(pos);
    }
  });
  return out;
}

#define SPCONV_INST(V) template csr<V, std::int32_t> ccoo_to_csr<V>(const ccoo<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
