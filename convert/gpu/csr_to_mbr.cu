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

// Each block's column and bitmap, written by the lane at the block's last position. A warp
// takes a tile of tile_positions consecutive positions, 32 a step; a block's entries are
// consecutive there (up to the next head), so an inclusive segmented OR over the lanes (by
// shuffles), with the bits carried from the step before for a block begun there, gives the
// lane at a block's last position the whole bitmap. The tile's positions before its first head
// belong to a block the previous tile's warp finishes: its last block runs on past the tile, at
// most r*c <= 64 positions, up to the next head. Every bitmap is written once, by one store
// where the array is aligned to bitmap_bytes (1, 2, 4 or 8: then so is every bitmap).
constexpr std::int64_t tile_positions = 1024;

__global__ void write_blocks(std::int64_t nnz, const std::uint8_t* head, const std::uint8_t* bit, const I* head_col,
                             const I* block_no, int w, I* block_col, std::uint8_t* bitmaps) {
  constexpr unsigned full_warp = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const auto lanes_to = [](int l) { return full_warp >> (31 - l); };  // lanes 0 .. l
  const unsigned upto = lanes_to(lane);
  for (std::int64_t tile = first_index() / 32; tile * tile_positions < nnz; tile += grid_stride() / 32) {
    const std::int64_t end = min((tile + 1) * tile_positions, nnz);
    std::uint64_t carry = 0;  // the bits so far of the block open at the step's start
    I carry_col = 0;
    bool open = false;  // whether that block is this warp's (begun in this tile)
    for (std::int64_t s0 = tile * tile_positions; s0 < nnz; s0 += 32) {
      if (s0 >= end && !open) break;  // past the tile only the open block is finished
      const std::int64_t t = s0 + lane;
      const bool inside = t < nnz, opens = inside && head[t] != 0;
      const bool last = inside && (t + 1 == nnz || head[t + 1] != 0);
      const unsigned heads = __ballot_sync(full_warp, opens);
      std::uint64_t map = inside ? std::uint64_t{1} << bit[t] : 0;
      // After the step of d, map holds the bits of the lanes (lane - 2d, lane] from the last
      // head at or before the lane: add the lane d before while no head lies in (lane - d, lane].
      for (int d = 1; d < 32; d *= 2) {
        const std::uint64_t earlier = __shfl_up_sync(full_warp, map, d);
        if (lane >= d && (heads & upto & ~lanes_to(lane - d)) == 0) map |= earlier;
      }
      const bool from_before = (heads & upto) == 0;  // the lane's block began before the step
      const int head_lane = from_before ? 0 : 31 - __clz(static_cast<int>(heads & upto));
      const I col = __shfl_sync(full_warp, opens ? head_col[t] : 0, head_lane);
      if (from_before) map |= carry;
      const I block_column = from_before ? carry_col : col;
      if (last && (from_before ? open : s0 < end)) {
        const std::int64_t b = block_no[t] - 1;
        block_col[b] = block_column;
        if (reinterpret_cast<std::uintptr_t>(bitmaps) % w != 0) {
          for (int byte = 0; byte < w; ++byte) bitmaps[b * w + byte] = static_cast<std::uint8_t>(map >> (8 * byte));
        } else {
          switch (w) {
            case 1: bitmaps[b] = static_cast<std::uint8_t>(map); break;
            case 2: reinterpret_cast<std::uint16_t*>(bitmaps)[b] = static_cast<std::uint16_t>(map); break;
            case 4: reinterpret_cast<std::uint32_t*>(bitmaps)[b] = static_cast<std::uint32_t>(map); break;
            default: reinterpret_cast<std::uint64_t*>(bitmaps)[b] = map; break;
          }
        }
      }
      // The block open after the step: lane 31's, unless it ends there.
      const bool owned = from_before ? open : s0 < end;
      open = __shfl_sync(full_warp, static_cast<int>(inside && !last && owned), 31) != 0;
      carry = __shfl_sync(full_warp, map, 31);
      carry_col = __shfl_sync(full_warp, block_column, 31);
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
