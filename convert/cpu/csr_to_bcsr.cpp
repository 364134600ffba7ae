// CSR -> BCSR on the CPU, and the block size rule (specs/formats/bcsr.md).
// A block row is the merge of its r sorted CSR rows in column order; in that order the
// entries of one r x c block are a run of equal col / c, so counting blocks (for the size
// rule and for block_ptr) and filling them are one merge each, with O(r) memory and no
// per-column scratch (matrices may have 2^31 columns). Work is split over block rows;
// every block row is handled alone, so the output does not depend on the thread count.
#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "convert/cpu/bcsr.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

// Block sides the automatic rule tries (specs/formats/bcsr.md, "Automatic block size").
constexpr std::array<std::int32_t, 6> candidate_sides = {1, 2, 3, 4, 6, 8};

// Block rows per parallel chunk: about 4096 matrix rows.
std::int64_t block_row_grain(std::int64_t r) { return std::max<std::int64_t>(1, 4096 / r); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Calls f(i, k) for every entry of rows [row0, row0 + h) in increasing column order
// (equal columns: the upper row first), with i the row within the block row and k the
// entry's CSR position: a merge of h <= 16 sorted rows.
template <class V, class F>
void merge_rows(const csr<V, std::int32_t>& a, std::int64_t row0, std::int64_t h, F&& f) {
  std::array<std::int32_t, bcsr_max_block> head, end;
  for (std::int64_t i = 0; i < h; ++i) {
    head[i] = a.row_ptr[row0 + i];
    end[i] = a.row_ptr[row0 + i + 1];
  }
  for (;;) {
    int best = -1;
    std::int32_t best_col = 0;
    for (int i = 0; i < h; ++i)
      if (head[i] < end[i] && (best < 0 || a.col_idx[head[i]] < best_col)) {
        best = i;
        best_col = a.col_idx[head[i]];
      }
    if (best < 0) return;
    f(best, head[best]++);
  }
}

// Adds to counts[t] the number of r x cs[t] blocks that block row br needs, for every t,
// in one merge: a new block starts whenever an entry reaches the end of the current one.
template <class V>
void count_blocks(const csr<V, std::int32_t>& a, std::int64_t br, std::int64_t r, const std::int32_t* cs, int ncs,
                  std::int64_t* counts) {
  std::array<std::int64_t, candidate_sides.size()> block_end{};  // 0: no block yet
  merge_rows(a, br * r, std::min(r, a.rows - br * r), [&](int, std::int32_t k) {
    const std::int64_t col = a.col_idx[k];
    for (int t = 0; t < ncs; ++t)
      if (col >= block_end[t]) {
        ++counts[t];
        block_end[t] = (col / cs[t] + 1) * cs[t];
      }
  });
}

void check_side(std::string_view field, std::int32_t v) {
  if (v < 0 || v > bcsr_max_block)
    fail(errc::usage, "bcsr: " + std::string(field) + " = " + std::to_string(v) + " is out of range [0, " +
                          std::to_string(bcsr_max_block) + "] (0 chooses automatically)");
}

}  // namespace

template <class V>
bcsr_params resolve_bcsr_params(const csr<V, std::int32_t>& a, bcsr_params requested) {
  check_side("block_rows", requested.block_rows);
  check_side("block_cols", requested.block_cols);
  if (requested.block_rows != 0 && requested.block_cols != 0) return requested;

  std::vector<std::int32_t> rs(candidate_sides.begin(), candidate_sides.end()), cs = rs;
  if (requested.block_rows != 0) rs = {requested.block_rows};
  if (requested.block_cols != 0) cs = {requested.block_cols};
  const std::int64_t limit = bcsr_max_values(a.nnz(), a.rows);
  constexpr std::int64_t index_bytes = sizeof(std::int32_t);

  // The best so far as (bytes, r * c, r), compared lexicographically: the tie rules.
  bcsr_params best{};
  std::tuple<std::int64_t, std::int64_t, std::int64_t> best_key{};
  for (const std::int32_t r : rs) {
    // Exact block counts for every c candidate in one pass over the matrix.
    const std::int64_t mb = ceil_div(a.rows, r);
    const int blocks = block_count(mb, block_row_grain(r));
    std::vector<std::array<std::int64_t, candidate_sides.size()>> partial(blocks);
    parallel_blocks(mb, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
      partial[b].fill(0);
      for (std::int64_t br = lo; br < hi; ++br)
        count_blocks(a, br, r, cs.data(), static_cast<int>(cs.size()), partial[b].data());
    });
    for (std::size_t t = 0; t < cs.size(); ++t) {
      std::int64_t nblocks = 0;
      for (const auto& p : partial) nblocks += p[t];
      const std::int64_t c = cs[t], nvalues = nblocks * r * c;
      if (nvalues > limit) continue;
      const std::int64_t bytes =
          nvalues * static_cast<std::int64_t>(sizeof(V)) + nblocks * index_bytes + (mb + 1) * index_bytes;
      const std::tuple<std::int64_t, std::int64_t, std::int64_t> key{bytes, r * c, r};
      if (best.block_rows == 0 || key < best_key) {
        best = {r, static_cast<std::int32_t>(c)};
        best_key = key;
      }
    }
  }
  if (best.block_rows == 0)
    fail(errc::unsupported,
         "bcsr: every candidate block size with block_rows = " + std::to_string(requested.block_rows) +
             ", block_cols = " + std::to_string(requested.block_cols) + " needs more than " + std::to_string(limit) +
             " values (the limit min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20))");
  return best;
}

template <class V>
bcsr<V> csr_to_bcsr(const csr<V, std::int32_t>& a, const bcsr_params& requested) {
  const bcsr_params p = resolve_bcsr_params(a, requested);
  const std::int64_t r = p.block_rows, c = p.block_cols, rc = r * c;
  const std::int32_t c32 = p.block_cols;
  bcsr<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = p;
  const std::int64_t mb = ceil_div(a.rows, r);
  const int blocks = block_count(mb, block_row_grain(r));

  // Pass 1: blocks per block row, then offsets. A block holds at least one entry, so
  // nblocks <= nnz fits the 32-bit offsets.
  out.block_ptr.resize(mb + 1);
  out.block_ptr[0] = 0;
  parallel_blocks(mb, blocks, [&](int, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t br = lo; br < hi; ++br) {
      std::int64_t n = 0;
      count_blocks(a, br, r, &c32, 1, &n);
      out.block_ptr[br + 1] = static_cast<std::int32_t>(n);
    }
  });
  for (std::int64_t br = 0; br < mb; ++br) out.block_ptr[br + 1] += out.block_ptr[br];
  const std::int64_t nblocks = out.block_ptr[mb], nvalues = nblocks * rc;
  const std::int64_t limit = bcsr_max_values(a.nnz(), a.rows);
  if (nvalues > limit)
    fail(errc::unsupported,
         "bcsr: " + std::to_string(r) + " x " + std::to_string(c) + " blocks need " + std::to_string(nvalues) +
             " values for " + std::to_string(a.nnz()) + " entries, beyond the limit of " + std::to_string(limit) +
             " values (min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20)); use a smaller block size or 0 (automatic)");

  // Pass 2: block columns and values. Each block is zero-filled when its first entry
  // arrives; the +0.0 entries are recorded per chunk, sorted per block row (the merge
  // visits a block column by column, not in row-major order) and joined in chunk order.
  out.block_col.resize(nblocks);
  out.values.resize(nvalues);
  std::vector<std::vector<std::int32_t>> zeros(blocks);
  parallel_blocks(mb, blocks, [&](int b, std::int64_t lo, std::int64_t hi) {
    auto& zb = zeros[b];
    for (std::int64_t br = lo; br < hi; ++br) {
      std::int64_t k = static_cast<std::int64_t>(out.block_ptr[br]) - 1, block_start = 0, block_end = 0;
      const std::size_t z0 = zb.size();
      merge_rows(a, br * r, std::min(r, a.rows - br * r), [&](int i, std::int32_t e) {
        const std::int64_t col = a.col_idx[e];
        if (col >= block_end) {
          ++k;
          block_start = col / c * c;
          block_end = block_start + c;
          out.block_col[k] = static_cast<std::int32_t>(col / c);
          std::fill_n(out.values.begin() + k * rc, rc, V(0));
        }
        const std::int64_t at = k * rc + i * c + (col - block_start);
        out.values[at] = a.values[e];
        if (bcsr_detail::is_fill(a.values[e])) zb.push_back(static_cast<std::int32_t>(at));
      });
      std::sort(zb.begin() + static_cast<std::ptrdiff_t>(z0), zb.end());
    }
  });
  for (const auto& zb : zeros) out.stored_zeros.insert(out.stored_zeros.end(), zb.begin(), zb.end());
  return out;
}

#define SPCONV_INST(V)                                                                   \
  template bcsr_params resolve_bcsr_params<V>(const csr<V, std::int32_t>&, bcsr_params); \
  template bcsr<V> csr_to_bcsr<V>(const csr<V, std::int32_t>&, const bcsr_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
