// CSR5 SpMV on the CPU (liu-thesis-csr5.txt sec. 8.5.1, Algorithm 32; fast segmented sum:
// sec. 4.4.4, Algorithm 13).
//
// A tile's segments are numbered in CSR order by its bit_flag TRUEs; segment s is row
// tile_ptr + s, or tile_ptr + empty_offset[s] when the tile spans empty rows. Lane i walks
// its sigma entries; the part before its first TRUE is "red" (it continues a segment
// started in a lane to the left), a segment closed inside the lane is "green", the part
// after its last TRUE "blue" (it continues to the right). The blue sum of lane i plus the
// red sums of the seg_offset[i] start-free lanes after it and of the next lane with a start
// complete the segment (Algorithm 13). Instead of the thesis's scan difference
// (scan[i + seg_offset] - scan[i] + tmp[i]), that sum is added directly: the difference of
// two prefix sums would carry the rounding of other rows' partial sums.
//
// Where the thesis uses atomic adds for rows crossing tiles, the first segment (segment
// 0, which may continue a row from the previous tile) and the last one (which may go on
// into the next tile) of every tile are kept aside, and a calibrator pass in tile order
// joins them and the incomplete last tile (done CSR-style, sec. 8.5.1). Every row is
// therefore summed in one fixed order, whatever the thread count. Empty rows own no
// segment and are set by a pass over row_ptr.
#include "kernels/cpu/spmv_csr5.hpp"

#include <algorithm>
#include <bit>
#include <vector>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
void spmv(const csr5<V>& a, V alpha, const V* x, V beta, V* y) {
  const csr5_layout L(a.params.omega, a.params.sigma);
  const std::int64_t T = L.tile_size(), omega = L.omega, sigma = L.sigma;
  const std::int64_t rows = a.rows, nnz = a.nnz(), complete = nnz / T;
  const auto& rp = a.row_ptr;
  // As the CSR reference: beta == 0 must not read y (it may hold NaN or be uninitialised).
  auto finish = [&](std::int64_t r, V sum) { y[r] = beta == V(0) ? alpha * sum : alpha * sum + beta * y[r]; };

  parallel_for(rows, 1 << 14, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      if (rp[r] == rp[r + 1]) finish(r, V(0));
  });

  std::vector<V> first_sum(complete), last_sum(complete);
  std::vector<std::int64_t> last_row(complete);  // -1 when the tile is a single segment
  parallel_for(complete, std::max<std::int64_t>(1, (std::int64_t{1} << 14) / T), [&](std::int64_t t0, std::int64_t t1) {
    std::vector<std::uint64_t> flags(omega);
    std::vector<std::uint32_t> seg(omega), seg_offset(omega);
    std::vector<V> red(omega), blue(omega);
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t base = t * T;
      const std::int64_t row0 = a.tile_ptr[t] & csr5_row_mask;
      const std::uint32_t* empty_offset = (a.tile_ptr[t] & csr5_empty_rows_bit)
                                              ? a.tile_desc_offset.data() + a.tile_desc_offset_ptr[t]
                                              : nullptr;
      const std::uint32_t* desc = a.tile_desc.data() + t * L.tile_words();
      for (std::int64_t i = 0; i < omega; ++i) {
        flags[i] = csr5_get_bits(desc + i, omega, L.bit_flag_pos(), L.sigma);
        seg[i] = static_cast<std::uint32_t>(csr5_get_bits(desc + i, omega, 0, L.y_offset_bits));
        seg_offset[i] = static_cast<std::uint32_t>(csr5_get_bits(desc + i, omega, L.seg_offset_pos(), L.seg_offset_bits));
      }
      const std::uint32_t last = seg[omega - 1] + static_cast<std::uint32_t>(std::popcount(flags[omega - 1])) - 1;
      auto row_of = [&](std::uint32_t s) { return row0 + (empty_offset ? empty_offset[s] : s); };
      auto emit = [&](std::uint32_t s, V sum) {
        if (s == 0) first_sum[t] = sum;
        else if (s == last) last_sum[t] = sum;
        else finish(row_of(s), sum);  // a whole row inside this tile
      };
      last_row[t] = last == 0 ? -1 : row_of(last);

      // Algorithm 32 lines 5-21. seg[i] starts as y_offset[i], the index of the first
      // segment starting in lane i, and follows the segments closed in the lane.
      for (std::int64_t i = 0; i < omega; ++i) {
        V sum = 0;
        bool started = false;
        for (std::int64_t j = 0; j < sigma; ++j) {
          if ((flags[i] >> j) & 1) {
            if (started) emit(seg[i]++, sum);  // end of a green segment
            else if (i > 0) red[i - 1] = sum;  // end of the red sub-segment (lane 0 starts sealed)
            started = true;
            sum = 0;
          }
          const std::int64_t k = base + j * omega + i;
          sum += a.values[k] * x[a.col_idx[k]];
        }
        if (started) blue[i] = sum;
        else red[i - 1] = sum;  // no start in this lane: it is red throughout (never lane 0)
      }
      red[omega - 1] = 0;
      // Algorithm 32 lines 22-26: the blue sub-segment of each lane with a start, plus the
      // red sums of lanes i+1 .. i+seg_offset[i]+1 (stored at red[i .. i+seg_offset[i]]).
      for (std::int64_t i = 0; i < omega; ++i) {
        if (!flags[i]) continue;
        V carry = 0;
        for (std::int64_t k = i; k <= i + seg_offset[i]; ++k) carry += red[k];
        emit(seg[i], blue[i] + carry);
      }
    }
  });

  // Calibrator: rows crossing tiles, in tile order, then the incomplete last tile.
  std::int64_t open = -1;  // the row whose sum is being carried
  V acc = 0;
  auto carry_into = [&](std::int64_t r, V sum) {
    if (r == open) {
      acc += sum;
    } else {
      if (open >= 0) finish(open, acc);
      open = r;
      acc = sum;
    }
  };
  for (std::int64_t t = 0; t < complete; ++t) {
    carry_into(a.tile_ptr[t] & csr5_row_mask, first_sum[t]);
    if (last_row[t] >= 0) carry_into(last_row[t], last_sum[t]);
  }
  // The incomplete tile starts in row tile_ptr[complete] (= rows when there is none).
  for (std::int64_t r = a.tile_ptr[complete] & csr5_row_mask; r < rows && rp[r] < nnz; ++r) {
    const std::int64_t lo = std::max<std::int64_t>(rp[r], complete * T), hi = rp[r + 1];
    if (lo >= hi) continue;  // empty row, already set
    V sum = 0;
    for (std::int64_t k = lo; k < hi; ++k) sum += a.values[k] * x[a.col_idx[k]];
    carry_into(r, sum);
  }
  if (open >= 0) finish(open, acc);
}

#define SPCONV_INST(V) template void spmv<V>(const csr5<V>&, V, const V*, V, V*);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
