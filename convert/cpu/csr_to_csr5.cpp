// CSR -> CSR5 on the CPU (liu-thesis-csr5.txt sec. 6.3; the conversion steps of sec.
// 8.5.2: allocation, tile_ptr, tile_desc, transposition). One parallel pass over blocks
// of tiles computes tile_ptr, the descriptors and the transposition: instead of a binary
// search per tile and per segment (Algorithms 24 and 26), each block searches once and
// then walks row_ptr, O(rows + tiles) in all, and every entry is moved once. Each tile's
// output depends only on row_ptr and its own entries, so the result does not depend on
// the thread count.
#include <algorithm>
#include <limits>
#include <vector>

#include "convert/cpu/csr5.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

void check_request(const char* name, std::int32_t v, std::int32_t max) {
  if (v < 0 || v > max)
    fail(errc::usage, std::string("csr5: ") + name + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(max) + "] (0 = automatic)");
}

// dst[j * omega + i] = src[i * sigma + j]. The inner loop runs over the longer side, so
// the strided side has the shorter stride.
template <class T>
void transpose_tile(const T* src, T* dst, std::int64_t omega, std::int64_t sigma) {
  if (omega >= sigma) {
    for (std::int64_t j = 0; j < sigma; ++j)
      for (std::int64_t i = 0; i < omega; ++i) dst[j * omega + i] = src[i * sigma + j];
  } else {
    for (std::int64_t i = 0; i < omega; ++i)
      for (std::int64_t j = 0; j < sigma; ++j) dst[j * omega + i] = src[i * sigma + j];
  }
}

}  // namespace

template <class V>
csr5_params resolve_csr5_params(const csr<V, std::int32_t>& a, csr5_params requested, csr5_target target) {
  check_request("omega", requested.omega, csr5_max_omega);
  check_request("sigma", requested.sigma, csr5_max_sigma);
  csr5_params p = requested;
  // Thesis sec. 6.3.2: omega is the SIMD width of the processor.
  if (p.omega == 0) p.omega = target == csr5_target::gpu ? 32 : static_cast<std::int32_t>(32 / sizeof(V));
  if (p.sigma == 0) {
    if (target == csr5_target::cpu) {
      p.sigma = 16;  // x86: a fixed, empirically best tile height
    } else {
      // GPUs: sigma from nnz per row n, as the thesis's bounds <r, s, t, u> = <4, 32, 256, 4>
      // (n <= r: r; up to s: n; up to t: s; beyond: u) but with larger tiles for short rows:
      // n < 5: 8, 5 <= n <= 16: 16 (specs/formats/csr5.md, "Parameters", has the H100
      // measurements). Tiles large enough to amortise the per-tile work (descriptor, segmented
      // sum, calibrator), small enough that the rows a lane closes stay few (sigma 8 lets the
      // GPU kernel stage them; spmv_csr5.cu), and small again for long rows, where a tile is
      // one segment and the sum a plain reduction.
      constexpr std::int64_t short_rows = 5, short_sigma = 8, mid_rows = 16, mid_sigma = 16, s = 32, t = 256, u = 4;
      const std::int64_t n = a.rows > 0 ? a.nnz() / a.rows : 0;
      p.sigma = static_cast<std::int32_t>(n < short_rows ? short_sigma
                                          : n <= mid_rows ? mid_sigma
                                          : n <= s        ? n
                                          : n <= t        ? s
                                                          : u);
    }
  }
  return p;
}

template <class V>
csr5<V> csr_to_csr5(const csr<V, std::int32_t>& a, const csr5_params& requested, csr5_target target) {
  const csr5_params p = resolve_csr5_params(a, requested, target);
  constexpr std::int64_t max32 = std::numeric_limits<std::int32_t>::max();
  const std::int64_t rows = a.rows, nnz = a.nnz();
  if (rows > max32 || a.cols > max32)
    fail(errc::unsupported, "csr5: shape " + std::to_string(rows) + " x " + std::to_string(a.cols) +
                                " exceeds 2^31 - 1 rows or columns (tile_ptr holds 31-bit rows, col_idx is int32)");
  if (nnz > max32)
    fail(errc::unsupported,
         "csr5: " + std::to_string(nnz) + " entries exceed 2^31 - 1 (row_ptr and the tile fields are 32-bit)");
  if (rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(rows) + 1 || a.col_idx.size() != a.values.size() ||
      a.row_ptr[rows] != nnz)
    fail(errc::bad_input, "csr5: the input CSR's row_ptr/col_idx/values lengths do not match its shape and nnz");

  const csr5_layout L(p.omega, p.sigma);
  const std::int64_t T = L.tile_size(), omega = L.omega, sigma = L.sigma;
  const std::int64_t complete = nnz / T, tiles = (nnz + T - 1) / T;
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 15) / T);  // tiles per block
  const auto& rp = a.row_ptr;

  csr5<V> out;
  out.rows = rows;
  out.cols = a.cols;
  out.params = p;
  out.row_ptr = rp;

  // Pass 1, over blocks of tiles in parallel: one binary search per block for the row of
  // its first tile (Algorithm 24 line 3), then a walk along row_ptr. Reaching the row that
  // holds a tile's end entry passes exactly the rows starting inside the tile (its
  // bit_flag TRUEs besides the first entry) and the empty rows it spans (Algorithm 24
  // lines 5-12). Then the tile's descriptor and transposition.
  out.tile_ptr.resize(tiles + 1);
  out.tile_ptr[tiles] = static_cast<std::uint32_t>(rows);
  out.tile_desc.resize(complete * L.tile_words());
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  std::vector<std::uint8_t> spans_empty(tiles);
  std::vector<std::uint32_t> segments(complete);
  parallel_blocks(tiles, block_count(tiles, grain), [&](int, std::int64_t t0, std::int64_t t1) {
    if (t0 >= t1) return;
    std::vector<std::uint64_t> flags(omega);
    std::vector<std::uint32_t> starts(omega), seg_offset(omega);
    std::int64_t r = (std::upper_bound(rp.begin(), rp.end(), t0 * T) - rp.begin()) - 1;
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t base = t * T, end = std::min(base + T, nnz);
      const bool complete_tile = t < complete;
      out.tile_ptr[t] = static_cast<std::uint32_t>(r);
      std::fill(flags.begin(), flags.end(), 0);
      std::fill(starts.begin(), starts.end(), 0);
      flags[0] = 1;  // the tile's first entry seals its first segment (sec. 6.3.4)
      starts[0] = 1;
      bool empty = false;
      std::uint32_t s = 1;
      std::int64_t lane = 0, lane_base = base;  // row starts come in order: no division
      while (r < rows && rp[r + 1] <= end) {
        ++r;
        if (r == rows) break;
        if (rp[r] == rp[r + 1]) {
          empty = true;
        } else if (rp[r] < end) {  // a row starting inside the tile (never at its first entry)
          ++s;
          if (complete_tile) {
            while (rp[r] >= lane_base + sigma) {
              ++lane;
              lane_base += sigma;
            }
            flags[lane] |= std::uint64_t{1} << (rp[r] - lane_base);
            ++starts[lane];
          }
        }
      }
      spans_empty[t] = empty;
      if (!complete_tile) break;  // the incomplete tile has no descriptor (sec. 6.3.1)
      segments[t] = s;

      // seg_offset: lanes with a segment start count the start-free lanes right after them.
      std::uint32_t run = 0;
      for (std::int64_t i = omega - 1; i >= 0; --i) {
        seg_offset[i] = flags[i] ? run : 0;
        run = flags[i] ? 0 : run + 1;
      }
      std::uint32_t* desc = out.tile_desc.data() + t * L.tile_words();
      std::fill(desc, desc + L.tile_words(), 0u);
      std::uint64_t y_offset = 0;  // segment starts in the lanes to the left
      for (std::int64_t i = 0; i < omega; ++i) {
        csr5_put_bits(desc + i, omega, 0, L.y_offset_bits, y_offset);
        csr5_put_bits(desc + i, omega, L.seg_offset_pos(), L.seg_offset_bits, seg_offset[i]);
        csr5_put_bits(desc + i, omega, L.bit_flag_pos(), L.sigma, flags[i]);
        y_offset += starts[i];
      }

      // In-place transposition of the tile (sec. 6.3.1): step j of lane i to j * omega + i.
      transpose_tile(a.col_idx.data() + base, out.col_idx.data() + base, omega, sigma);
      transpose_tile(a.values.data() + base, out.values.data() + base, omega, sigma);
    }
  });
  // The incomplete last tile stays in CSR order (sec. 6.3.1).
  std::copy(a.col_idx.begin() + complete * T, a.col_idx.end(), out.col_idx.begin() + complete * T);
  std::copy(a.values.begin() + complete * T, a.values.end(), out.values.begin() + complete * T);

  // empty_offset (Algorithm 26): one entry per segment of the complete tiles that span
  // empty rows, the segment's row relative to the tile's; rare, so a second walk.
  out.tile_desc_offset_ptr.resize(complete + 1);
  out.tile_desc_offset_ptr[0] = 0;
  for (std::int64_t t = 0; t < complete; ++t)
    out.tile_desc_offset_ptr[t + 1] = out.tile_desc_offset_ptr[t] + (spans_empty[t] ? segments[t] : 0u);
  out.tile_desc_offset.resize(out.tile_desc_offset_ptr[complete]);
  if (!out.tile_desc_offset.empty())
    parallel_for(complete, grain, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        if (!spans_empty[t]) continue;
        const std::int64_t r0 = out.tile_ptr[t], r1 = out.tile_ptr[t + 1], end = (t + 1) * T;
        std::uint32_t* offset = out.tile_desc_offset.data() + out.tile_desc_offset_ptr[t];
        *offset++ = 0;
        for (std::int64_t r = r0 + 1; r <= r1; ++r)
          // Rows starting at the tile's end belong to the next tile (this also stops at
          // r = rows); an empty row shares its start with the next non-empty row.
          if (rp[r] < end && rp[r] != rp[r + 1]) *offset++ = static_cast<std::uint32_t>(r - r0);
      }
    });

  // Only now the empty-rows bit: the passes above read tile_ptr as plain rows.
  for (std::int64_t t = 0; t < tiles; ++t)
    if (spans_empty[t]) out.tile_ptr[t] |= csr5_empty_rows_bit;
  return out;
}

#define SPCONV_INST(V)                                                                                       \
  template csr5_params resolve_csr5_params<V>(const csr<V, std::int32_t>&, csr5_params, csr5_target); \
  template csr5<V> csr_to_csr5<V>(const csr<V, std::int32_t>&, const csr5_params&, csr5_target);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
