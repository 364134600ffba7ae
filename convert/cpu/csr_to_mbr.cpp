// CSR -> MBR on the CPU (shared/papers/mbr-kannan.txt sec. III).
// A block row is the r CSR rows it covers; walking them together in column order (an
// r-way merge of sorted rows) meets its blocks in increasing block column, and within a
// block the entries come out row by row, i.e. in increasing bit position: exactly the
// order in which MBR stores bitmaps and values. Two passes over block rows, both
// parallel: count the blocks (sizes the arrays), then fill each block row at its offset,
// so the output never depends on the thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <vector>

#include "convert/cpu/mbr.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

namespace {

using I = std::int32_t;

// Block rows per parallel task: about 4096 matrix rows, as the CSR kernels use.
std::int64_t block_row_grain(int r) { return std::max(1, (1 << 12) / r); }

// Calls entry(k) for every CSR entry k of rows [row0, row0 + rr), block by block in
// increasing block column and, inside a block, in increasing bit i*c + j; then
// block(bc, bitmap) once per non-empty block.
template <class V, class Entry, class Block>
void walk_block_row(const csr<V, I>& a, std::int64_t row0, int rr, int c, Entry&& entry, Block&& block) {
  std::array<I, 64> pos, end;
  for (int i = 0; i < rr; ++i) {
    pos[i] = a.row_ptr[row0 + i];
    end[i] = a.row_ptr[row0 + i + 1];
  }
  for (;;) {
    I bc = std::numeric_limits<I>::max();
    for (int i = 0; i < rr; ++i)
      if (pos[i] < end[i]) bc = std::min(bc, static_cast<I>(a.col_idx[pos[i]] / c));
    if (bc == std::numeric_limits<I>::max()) return;
    const std::int64_t base = static_cast<std::int64_t>(bc) * c, limit = base + c;
    std::uint64_t map = 0;
    for (int i = 0; i < rr; ++i)
      for (; pos[i] < end[i] && a.col_idx[pos[i]] < limit; ++pos[i]) {
        const int bit = i * c + static_cast<int>(a.col_idx[pos[i]] - base);
        map |= std::uint64_t{1} << bit;
        entry(pos[i]);
      }
    block(bc, map);
  }
}

// Number of r x c blocks of `a` for each c in cs (one merge of each block row's rows
// in column order; a block starts wherever col / c changes).
template <class V>
std::vector<std::int64_t> count_blocks(const csr<V, I>& a, int r, const std::vector<int>& cs) {
  constexpr I done = std::numeric_limits<I>::max();  // above every column (cols <= I max)
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  const int tasks = block_count(block_rows, block_row_grain(r));
  std::vector<std::vector<std::int64_t>> part(tasks);
  parallel_blocks(block_rows, tasks, [&](int t, std::int64_t br0, std::int64_t br1) {
    const std::size_t nc = cs.size();
    // The candidates are powers of two but a requested width need not be: shift when we can.
    std::vector<int> shift(nc);
    for (std::size_t k = 0; k < nc; ++k) {
      const auto c = static_cast<unsigned>(cs[k]);
      shift[k] = std::has_single_bit(c) ? std::countr_zero(c) : -1;
    }
    std::vector<std::int64_t> count(nc, 0);
    std::vector<I> last(nc);
    std::array<I, 64> head, pos, end;
    auto next = [&](int i) { return pos[i] < end[i] ? a.col_idx[pos[i]] : done; };
    for (std::int64_t br = br0; br < br1; ++br) {
      const int rr = static_cast<int>(std::min<std::int64_t>(r, a.rows - br * r));
      for (int i = 0; i < rr; ++i) {
        pos[i] = a.row_ptr[br * r + i];
        end[i] = a.row_ptr[br * r + i + 1];
        head[i] = next(i);
      }
      std::fill(last.begin(), last.end(), -1);
      for (;;) {
        int best = 0;
        for (int i = 1; i < rr; ++i) best = head[i] < head[best] ? i : best;
        const I col = head[best];
        if (col == done) break;
        ++pos[best];
        head[best] = next(best);
        for (std::size_t k = 0; k < nc; ++k) {
          const I bc = shift[k] >= 0 ? col >> shift[k] : col / cs[k];
          count[k] += bc != last[k];
          last[k] = bc;
        }
      }
    }
    part[t] = std::move(count);
  });
  std::vector<std::int64_t> total(cs.size(), 0);
  for (const auto& p : part)
    for (std::size_t k = 0; k < cs.size(); ++k) total[k] += p[k];
  return total;
}

void check_field(std::string_view name, std::int32_t v, std::int32_t hi) {
  if (v < 0 || v > hi)
    fail(errc::usage, "mbr: " + std::string(name) + " = " + std::to_string(v) + " is out of range [0, " +
                          std::to_string(hi) + "] (0 = automatic)");
}

}  // namespace

template <class V>
mbr_params resolve_mbr_params(const csr<V, I>& a, mbr_params requested) {
  check_field("block_rows", requested.block_rows, 64);
  check_field("block_cols", requested.block_cols, 64);
  const std::int32_t wb = requested.bitmap_bytes;
  if (wb != 0 && wb != 1 && wb != 2 && wb != 4 && wb != 8)
    fail(errc::usage, "mbr: bitmap_bytes = " + std::to_string(requested.bitmap_bytes) +
                          " is not one of 0 (derive), 1, 2, 4, 8");

  mbr_params p = requested;
  if (p.block_rows == 0 || p.block_cols == 0) {
    const std::vector<int> sizes = {1, 2, 4, 8};
    const std::vector<int> rs = requested.block_rows ? std::vector<int>{requested.block_rows} : sizes;
    std::int64_t best_bytes = -1;
    for (int r : rs) {
      // A fixed field is at most 64, so r = 1 or c = 1 always leaves a candidate.
      std::vector<int> cs;
      for (int c : requested.block_cols ? std::vector<int>{requested.block_cols} : sizes)
        if (r * c <= 64) cs.push_back(c);
      const std::vector<std::int64_t> blocks = count_blocks(a, r, cs);
      const std::int64_t ptr_bytes = 2 * static_cast<std::int64_t>(sizeof(I)) * ((a.rows + r - 1) / r + 1);
      for (std::size_t k = 0; k < cs.size(); ++k) {
        const std::int64_t c = cs[k];
        const std::int64_t bytes =
            blocks[k] * (static_cast<std::int64_t>(sizeof(I)) + mbr_bitmap_bytes(r * c)) + ptr_bytes;
        const bool larger = r * c > std::int64_t{p.block_rows} * p.block_cols ||
                            (r * c == std::int64_t{p.block_rows} * p.block_cols && r > p.block_rows);
        if (best_bytes < 0 || bytes < best_bytes || (bytes == best_bytes && larger)) {
          best_bytes = bytes;
          p.block_rows = r;
          p.block_cols = static_cast<std::int32_t>(c);
        }
      }
    }
  }
  const std::int64_t positions = std::int64_t{p.block_rows} * p.block_cols;
  if (positions > 64)
    fail(errc::unsupported, "mbr: " + std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols) +
                                " blocks have " + std::to_string(positions) +
                                " positions; a bitmap holds at most 64 (r*c <= 64)");
  const int w = mbr_bitmap_bytes(positions);
  if (requested.bitmap_bytes != 0 && requested.bitmap_bytes != w)
    fail(errc::usage, "mbr: bitmap_bytes = " + std::to_string(requested.bitmap_bytes) + " but " +
                          std::to_string(p.block_rows) + " x " + std::to_string(p.block_cols) + " blocks need " +
                          std::to_string(w) + " (the smallest of 1, 2, 4, 8 holding r*c bits)");
  p.bitmap_bytes = w;
  return p;
}

template <class V>
mbr<V> csr_to_mbr(const csr<V, I>& a, const mbr_params& requested) {
  const mbr_params p = resolve_mbr_params(a, requested);
  const int r = p.block_rows, c = p.block_cols, w = p.bitmap_bytes;
  mbr<V> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = p;
  const std::int64_t block_rows = (a.rows + r - 1) / r;
  const std::int64_t grain = block_row_grain(r);
  auto rows_in = [&](std::int64_t br) { return static_cast<int>(std::min<std::int64_t>(r, a.rows - br * r)); };

  // Pass 1: blocks per block row, into block_row_ptr[br + 1]; values per block row are
  // the CSR rows' entries, so value_ptr comes straight from row_ptr.
  out.block_row_ptr.resize(block_rows + 1);
  out.value_ptr.resize(block_rows + 1);
  out.block_row_ptr[0] = 0;
  parallel_for(block_rows, grain, [&](std::int64_t br0, std::int64_t br1) {
    for (std::int64_t br = br0; br < br1; ++br) {
      I n = 0;
      walk_block_row(a, br * r, rows_in(br), c, [](I) {}, [&](I, std::uint64_t) { ++n; });
      out.block_row_ptr[br + 1] = n;
      out.value_ptr[br] = a.row_ptr[br * r];
    }
  });
  out.value_ptr[block_rows] = a.row_ptr[a.rows];
  // Block counts never exceed nnz, which fits I in the source CSR: no overflow here.
  for (std::int64_t br = 0; br < block_rows; ++br) out.block_row_ptr[br + 1] += out.block_row_ptr[br];

  // Pass 2: each block row writes its blocks and values at its own offsets.
  const std::int64_t blocks = out.block_row_ptr[block_rows];
  out.block_col_idx.resize(blocks);
  out.bitmaps.resize(static_cast<std::size_t>(blocks) * w);
  out.values.resize(a.nnz());
  parallel_for(block_rows, grain, [&](std::int64_t br0, std::int64_t br1) {
    for (std::int64_t br = br0; br < br1; ++br) {
      I b = out.block_row_ptr[br], v = out.value_ptr[br];
      walk_block_row(
          a, br * r, rows_in(br), c, [&](I k) { out.values[v++] = a.values[k]; },
          [&](I bc, std::uint64_t map) {
            out.block_col_idx[b] = bc;
            std::uint8_t* dst = out.bitmaps.data() + static_cast<std::size_t>(b) * w;
            for (int byte = 0; byte < w; ++byte) dst[byte] = static_cast<std::uint8_t>(map >> (8 * byte));
            ++b;
          });
    }
  });
  return out;
}

#define SPCONV_INST(V)                                                                    \
  template mbr_params resolve_mbr_params<V>(const csr<V, I>&, mbr_params);              \
  template mbr<V> csr_to_mbr<V>(const csr<V, I>&, const mbr_params&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
