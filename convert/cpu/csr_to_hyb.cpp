// CSR -> HYB on the CPU: the ELL width rule, then one pass that fills the ELL part and
// counts each row block's tail, and one pass that writes the tail at its block's offset.
// Row blocks are fixed by the row count, so the output never depends on the thread count.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "convert/cpu/hyb.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
std::int64_t hyb_auto_ell_width(const csr<V, std::int32_t>& a) {
  const std::int64_t rows = a.rows;
  const std::int64_t need = std::max(hyb_breakeven_rows, (rows + hyb_relative_speed - 1) / hyb_relative_speed);
  if (rows < need) return 0;
  // A width w qualifies only if `need` rows hold >= w entries each, so w <= nnz / need:
  // row lengths beyond that bound are counted at the bound (histogram stays small).
  const std::int64_t bound = a.nnz() / need;
  const int blocks = block_count(rows, 1 << 14);
  std::vector<std::vector<std::int64_t>> hist(blocks);
  parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    hist[b].assign(bound + 1, 0);
    for (std::int64_t r = lo; r < hi; ++r)
      ++hist[b][std::min<std::int64_t>(a.row_ptr[r + 1] - a.row_ptr[r], bound)];
  });
  // at_least = #rows with >= w entries, for w = bound, bound - 1, ...: the first w that
  // reaches `need` is the largest qualifying width.
  std::int64_t at_least = 0;
  for (std::int64_t w = bound; w >= 1; --w) {
    for (const auto& h : hist) at_least += h[w];
    if (at_least >= need) return w;
  }
  return 0;
}

template <class V>
hyb_params resolve_hyb_params(const csr<V, std::int32_t>& a, hyb_params requested) {
  hyb_params p = requested;
  if (p.ell_width < 0)
    fail(errc::usage, "hyb: ell_width = " + std::to_string(p.ell_width) +
                          " is negative (0 = automatic, >= 1 = slots per row in the ELL part)");
  if (p.ell_width == 0) p.ell_width = hyb_auto_ell_width(a);
  const std::int64_t rows = a.rows, w = p.ell_width;
  const std::int64_t cap = ell_slot_cap(a.nnz(), rows);
  if (rows > 0 && w > cap / rows)
    fail(errc::usage, "hyb: ell_width = " + std::to_string(w) + " gives " + std::to_string(rows) + " x " +
                          std::to_string(w) + " ELL slots, beyond the container cap 64 * (nnz + rows + 1) + 2^20 = " +
                          std::to_string(cap) + " for this matrix; choose a smaller width or 0 (automatic)");
  if (rows * w > std::numeric_limits<std::int32_t>::max())
    fail(errc::unsupported, "hyb: ell_width = " + std::to_string(w) + " gives " + std::to_string(rows * w) +
                                " ELL slots, beyond the 32-bit slot index (max 2^31-1)");
  return p;
}

template <class V>
hyb<V> csr_to_hyb(const csr<V, std::int32_t>& a, const hyb_params& requested) {
  using I = std::int32_t;
  const hyb_params p = resolve_hyb_params(a, requested);
  const std::int64_t rows = a.rows, w = p.ell_width;
  hyb<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = p;
  hyb<V>::sync_parts(out);
  out.ell.col_idx.resize(rows * w);
  out.ell.values.resize(rows * w);

  const int blocks = block_count(rows, 1 << 12);
  std::vector<std::int64_t> tail_at(blocks + 1, 0);  // per block: tail entries, then offsets
  parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    // Slot-major inside the block: each slot k is a contiguous run of the column-major arrays.
    for (std::int64_t k = 0; k < w; ++k) {
      I* col = out.ell.col_idx.data() + k * rows;
      V* val = out.ell.values.data() + k * rows;
      for (std::int64_t r = lo; r < hi; ++r) {
        const std::int64_t j = a.row_ptr[r] + k;
        if (j < a.row_ptr[r + 1]) {
          col[r] = a.col_idx[j];
          val[r] = a.values[j];
        } else {
          col[r] = ell_padding;
          val[r] = V(0);
        }
      }
    }
    std::int64_t t = 0;
    for (std::int64_t r = lo; r < hi; ++r) t += std::max<std::int64_t>(0, a.row_ptr[r + 1] - a.row_ptr[r] - w);
    tail_at[b + 1] = t;
  });
  for (int b = 0; b < blocks; ++b) tail_at[b + 1] += tail_at[b];

  const std::int64_t tail = tail_at[blocks];
  out.coo.row_idx.resize(tail);
  out.coo.col_idx.resize(tail);
  out.coo.values.resize(tail);
  parallel_blocks(rows, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    std::int64_t o = tail_at[b];
    for (std::int64_t r = lo; r < hi; ++r)
      for (std::int64_t j = a.row_ptr[r] + w; j < a.row_ptr[r + 1]; ++j, ++o) {
        out.coo.row_idx[o] = static_cast<I>(r);
        out.coo.col_idx[o] = a.col_idx[j];
        out.coo.values[o] = a.values[j];
      }
  });
  return out;
}

#define SPCONV_INST(V)                                                                     \
  template std::int64_t hyb_auto_ell_width<V>(const csr<V, std::int32_t>&);                \
  template hyb_params resolve_hyb_params<V>(const csr<V, std::int32_t>&, hyb_params);      \
  template hyb<V> csr_to_hyb<V>(const csr<V, std::int32_t>&, const hyb_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
