// CSR -> MBR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"). The result equals cpu::csr_to_mbr bit for bit.
// MBR stores a block row's blocks by block column and a block's values by bit i*c + j, i.e.
// the entries in block order (convert/gpu/block_rows.cuh): that pass writes every value
// straight to its MBR position, value_ptr[br] = row_ptr[br * r] (block rows cover
// consecutive rows) and block_row_ptr from the block numbers. Then each block's column and
// bitmap (the OR of its entries' bits, stored little-endian in bitmap_bytes bytes) are written
// by the lane of its last entry, the bits gathered across the lanes of a warp.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "convert/cpu/mbr.hpp"
#include "convert/gpu/block_rows.cuh"
#include "convert/gpu/mbr.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;

// Each block's bitmap, written by the lane holding the block's last position, and its column,
// by the lane holding its head. A warp takes a tile of tile_positions consecutive positions,
// step_positions a step, lane_positions consecutive ones a lane (two 4-byte loads: the heads
// and the bits). A block's entries are consecutive (up to the next head), so the lane ORs its
// own positions' bits from its last head on, and one segmented OR over the lanes (by shuffles),
// with the bits carried from the step before for a block begun there, completes each lane's
// open block: one scan per 128 positions. A scan per 32 positions (a position a lane) kept the
// multiprocessors 84% busy in this pass (Nsight Compute, H100, the replicated set at 100M
// entries); this form took CSR -> MBR from 7.28 to 7.06 SpMV-times there (geometric mean, both
// binaries in one device call: spconv bench --formats mbr). The tile's positions before its
// first head belong to a block the previous tile's warp finishes: its last block runs on past
// the tile, at most r*c <= 64 positions, up to the next head. Every bitmap is written once, by
// one store where the array is aligned to bitmap_bytes (1, 2, 4 or 8: then so is every bitmap).
// A step's flags and the block number of each lane's last position (the lane's others follow
// by counting its heads) are loaded a step ahead, and the heads' columns before the scan, so
// that no load waits behind the scan's shuffles: loading block_no and head_col at each store
// held 75% of this pass's stalls on the 27-point stencil (Nsight Compute, H100, 2.12 ms).
constexpr int lane_positions = 4;
constexpr std::int64_t step_positions = 32 * lane_positions;
constexpr std::int64_t tile_positions = 8 * step_positions;

// At most 64 registers, 4 blocks of 8 warps: 68 without the bound (3 blocks) measured no
// better (stencil 5.05 against 5.09 SpMV-times, replicated set 6.35 against 6.32).
__global__ void __launch_bounds__(block_rows::threads, 4)
    write_blocks(std::int64_t nnz, const std::uint8_t* head, const std::uint8_t* bit, const I* head_col,
                 const I* block_no, int w, I* block_col, std::uint8_t* bitmaps) {
  constexpr unsigned full_warp = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const bool words = (reinterpret_cast<std::uintptr_t>(head) | reinterpret_cast<std::uintptr_t>(bit)) % 4 == 0;
  const bool aligned = reinterpret_cast<std::uintptr_t>(bitmaps) % w == 0;
  const auto store = [&](std::int64_t b, std::uint64_t map) {
    if (!aligned) {
      for (int byte = 0; byte < w; ++byte) bitmaps[b * w + byte] = static_cast<std::uint8_t>(map >> (8 * byte));
      return;
    }
    switch (w) {
      case 1: bitmaps[b] = static_cast<std::uint8_t>(map); break;
      case 2: reinterpret_cast<std::uint16_t*>(bitmaps)[b] = static_cast<std::uint16_t>(map); break;
      case 4: reinterpret_cast<std::uint32_t*>(bitmaps)[b] = static_cast<std::uint32_t>(map); break;
      default: reinterpret_cast<std::uint64_t*>(bitmaps)[b] = map; break;
    }
  };
  // A step's loads, issued a step ahead: byte q of heads / bits is position p0 + q's
  // head flag and bit, last_block the block number (block_no) of the lane's last position
  // before nnz. Positions past nnz count as heads (of nothing), so that the last entry ends its
  // block.
  struct step_loads {
    std::uint32_t heads = 0x01010101u, bits = 0;
    I last_block = 0;
  };
  const auto load_step = [&](std::int64_t s0) {
    step_loads d;
    const std::int64_t p0 = s0 + lane_positions * lane;
    if (p0 >= nnz) return d;
    if (words && p0 + lane_positions <= nnz) {
      d.heads = *reinterpret_cast<const std::uint32_t*>(head + p0);
      d.bits = *reinterpret_cast<const std::uint32_t*>(bit + p0);
    } else {
      for (int q = 0; q < lane_positions && p0 + q < nnz; ++q) {
        d.heads = (d.heads & ~(0xffu << (8 * q))) | std::uint32_t{head[p0 + q]} << (8 * q);
        d.bits |= std::uint32_t{bit[p0 + q]} << (8 * q);
      }
    }
    d.last_block = block_no[p0 / lane_positions];  // the word's count: no heads in its padding
    return d;
  };
  for (std::int64_t tile = first_index() / 32; tile * tile_positions < nnz; tile += grid_stride() / 32) {
    const std::int64_t end = min((tile + 1) * tile_positions, nnz);
    std::uint64_t carry = 0;  // the bits so far of the block open at the step's start
    bool open = false;        // whether that block is this warp's (its head lies in this tile)
    step_loads next = load_step(tile * tile_positions);
    for (std::int64_t s0 = tile * tile_positions; s0 < nnz; s0 += step_positions) {
      if (s0 >= end && !open) break;  // past the tile only the open block is finished
      const std::int64_t p0 = s0 + lane_positions * lane;
      const std::uint32_t heads = next.heads, bits = next.bits;
      const I last_block = next.last_block;
      next = load_step(s0 + step_positions);
      // The columns of the heads this warp owns (those of the tile: a head's block is the
      // warp that holds it), loaded now so that their latency passes under the scan below.
      I cols[lane_positions];
#pragma unroll
      for (int q = 0; q < lane_positions; ++q)
        cols[q] = s0 < end && p0 + q < nnz && ((heads >> (8 * q)) & 0xffu) != 0 ? head_col[p0 + q] : 0;
      // The head flag after the lane's last position: the next lane's first, or past the step.
      std::uint32_t after = __shfl_down_sync(full_warp, heads & 0xffu, 1);
      const std::uint32_t next_first = __shfl_sync(full_warp, next.heads & 0xffu, 0);
      if (lane == 31) after = next_first;
      // The lane's own OR from its last head on, at each of its positions.
      std::uint64_t own[lane_positions];
      unsigned seen = 0;  // bit q: a head at or before position q within the lane
      std::uint64_t acc = 0;
#pragma unroll
      for (int q = 0; q < lane_positions; ++q) {
        const bool h = ((heads >> (8 * q)) & 0xffu) != 0;
        if (h) acc = 0;
        if (p0 + q < nnz) acc |= std::uint64_t{1} << ((bits >> (8 * q)) & 63u);
        own[q] = acc;
        seen |= (h ? 1u : 0u) << q;
        seen |= (seen & (1u << q)) << 1;  // carried to q + 1
      }
      seen &= (1u << lane_positions) - 1u;
      // Bit q: a head at position p0 + q < nnz (those past nnz hold no block number).
      unsigned heads_in_lane = 0;
#pragma unroll
      for (int q = 0; q < lane_positions; ++q)
        heads_in_lane |= (p0 + q < nnz && ((heads >> (8 * q)) & 0xffu) != 0 ? 1u : 0u) << q;
      // Segmented OR over the lanes: after the step of d, v holds the bits of the lanes
      // (lane - 2d, lane] from the last head at or before the lane's end, f whether one lies there.
      std::uint64_t v = acc;
      bool f = seen != 0;
      for (int d = 1; d < 32; d *= 2) {
        const std::uint64_t ov = __shfl_up_sync(full_warp, v, d);
        const bool of = __shfl_up_sync(full_warp, f ? 1 : 0, d) != 0;
        if (lane >= d && !f) {
          v |= ov;
          f = of;
        }
      }
      // What reaches the lane's first position: the lanes before it, and the carried bits where
      // no head lies in the step before the lane.
      const std::uint64_t v_before = __shfl_up_sync(full_warp, v, 1);
      const int f_up = __shfl_up_sync(full_warp, f ? 1 : 0, 1);  // every lane shuffles, lane 0 too
      const bool f_before = lane > 0 && f_up != 0;
      const std::uint64_t incoming = (lane > 0 ? v_before : 0) | (f_before ? 0 : carry);
      bool owned_last = false;  // for the step's last position: whether its block is this warp's
#pragma unroll
      for (int q = 0; q < lane_positions; ++q) {
        const std::int64_t p = p0 + q;
        const bool from_before = !f_before && (seen & (1u << q)) == 0;
        const bool owned = from_before ? open : s0 < end;
        const bool h = ((heads >> (8 * q)) & 0xffu) != 0;
        const bool last = (q + 1 < lane_positions ? (heads >> (8 * (q + 1))) & 0xffu : after) != 0;
        if (p < nnz && owned) {
          // Position p's block number: the lane's last one less the heads after p in the lane.
          const unsigned later = static_cast<unsigned>(__popc(heads_in_lane >> (q + 1)));
          const I b = last_block - static_cast<I>(later) - 1;
          if (h) block_col[b] = cols[q];
          if (last) store(b, own[q] | ((seen & (1u << q)) != 0 ? 0 : incoming));
        }
        if (q + 1 == lane_positions) owned_last = p < nnz && owned && !last;
      }
      // The block open after the step: lane 31's last position's, unless it ends there.
      open = __shfl_sync(full_warp, owned_last ? 1 : 0, 31) != 0;
      const std::uint64_t v31 = __shfl_sync(full_warp, v, 31);
      carry = __shfl_sync(full_warp, f ? 1 : 0, 31) != 0 ? v31 : v31 | carry;
    }
  }
}

}  // namespace

template <class V>
mbr<V, I, device> csr_to_mbr(const csr<V, I, device>& a, const mbr_params& resolved, gpu_context& ctx) {
  const std::string who = "gpu::csr_to_mbr";
  if (resolved.block_rows == 0 || resolved.block_cols == 0)
    fail(errc::usage, who + ": block size " + std::to_string(resolved.block_rows) + " x " +
                          std::to_string(resolved.block_cols) +
                          ": pass resolved parameters (cpu::resolve_mbr_params on a host copy), not an automatic "
                          "request");
  mbr<V, I, device> out;
  // With both sides fixed the rule reads nothing of the matrix (an empty host CSR stands in):
  // it range-checks with the CPU's messages and derives bitmap_bytes (a 0 there is derived,
  // any other value must be the derived one).
  out.params = cpu::resolve_mbr_params(csr<V, I>{}, resolved);
  const int r = out.params.block_rows, c = out.params.block_cols, w = out.params.bitmap_bytes;
  out.rows = a.rows;
  out.cols = a.cols;
  const std::int64_t mb = (a.rows + r - 1) / r, nnz = a.nnz();
  out.value_ptr.resize(mb + 1);
  out.block_row_ptr.resize(mb + 1);
  out.values.resize(nnz);
  const block_rows::block_order order = block_rows::order_by_blocks(
      a, r, c, out.values.data(), nullptr, out.block_row_ptr.data(), out.value_ptr.data(), ctx, who);
  if (nnz == 0) {
    ctx.synchronize();
    return out;
  }
  // The one wait before the end: the block count sizes the block arrays.
  const I blocks = block_rows::read_back(out.block_row_ptr.data() + mb, ctx, who)[0];
  out.block_col_idx.resize(blocks);
  out.bitmaps.resize(static_cast<std::size_t>(blocks) * w);
  write_blocks<<<launch_blocks((nnz + tile_positions - 1) / tile_positions * 32, block_rows::threads),
                 block_rows::threads, 0, stream_of(ctx)>>>(
      nnz, order.head.data(), order.place.data(), order.head_col.data(), order.block_no.data(), w,
      out.block_col_idx.data(), out.bitmaps.data());
  block_rows::check_launch(who, "writing the blocks");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) \
  template mbr<V, I, device> csr_to_mbr<V>(const csr<V, I, device>&, const mbr_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
