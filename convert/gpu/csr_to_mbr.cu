// CSR -> MBR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"). The result equals cpu::csr_to_mbr bit for bit.
// MBR stores a block row's blocks by block column and a block's values by bit i*c + j, i.e.
// the entries in block order (convert/gpu/block_rows.cuh): that pass writes every value
// straight to its MBR position, value_ptr[br] = row_ptr[br * r] (block rows cover
// consecutive rows) and block_row_ptr from the block numbers. Then each block's column and
// bitmap (the OR of its entries' bits, stored little-endian in bitmap_bytes bytes) are written
// by the thread holding its head, which walks the block's positions.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "convert/cpu/mbr.hpp"
#include "convert/gpu/block_rows.cuh"
#include "convert/gpu/mbr.hpp"
#include "convert/gpu/mbr_rows.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;

// Each block's column and bitmap (the OR of its entries' bits, in the bitmap's own word M). A
// thread takes a chunk of chunk_positions consecutive positions (16-byte loads of their heads
// and bits, coalesced over the warp), and the thread holding a block's head finishes it: the
// blocks that begin and end in its chunk in one pass over the chunk, the last one begun there
// by walking on through the chunks after it up to the next head (a block spans at most
// r*c <= 64 positions, so at most 4 more chunks), which the threads beside it have just
// loaded. A chunk without a head lies inside a block begun before it. The blocks begun in a
// warp's chunks are consecutive: their bitmaps and heads' positions go to the warp's share of
// shared memory, and the warp then writes the blocks' bitmaps and columns in order, coalesced.
// Stop 34's form (a warp per 128 positions, 4 a lane, the lanes' bits joined by a segmented OR
// over the warp by shuffles) took 0.47-0.63 ms per 100M entries whatever the matrix, at 67-90%
// of the multiprocessors' throughput: 18% of CSR -> MBR on the replicated set (Nsight Compute,
// H200, stop 35 device call 1). This one takes 0.22-0.35 ms (call 4: Groebner_id2003_aug 0.54
// -> 0.32 ms, bcsstk13 0.54 -> 0.35, ca-AstroPh 0.63 -> 0.32). Where each thread stored its
// own blocks (a chunk apart: a warp's store touched 4 times the sectors), graph-like matrices
// of 1-byte bitmaps lost as much as the others gained (bcspwr10 5.63 -> 6.92 SpMV-times,
// ca-AstroPh 4.89 -> 6.32; call 2), and with the heads' columns loaded one at a time in the
// warp's writing loop, ca-AstroPh's pass took 0.59 ms (call 3).
constexpr int chunk_positions = static_cast<int>(block_rows::padded_positions);  // head, bit: whole chunks
constexpr int tile_positions = 32 * chunk_positions;                              // a warp's

// Bit q: byte q of a word of head flags (bytes 0 or 1) is set. The product moves byte q's
// bit to bit 21 + q, each bit from one of its four terms and without carries.
__device__ __forceinline__ unsigned flags_of(std::uint32_t word) { return (word * 0x00204081u) >> 21 & 0xfu; }
__device__ __forceinline__ unsigned chunk_heads(const uint4& h) {
  return flags_of(h.x) | flags_of(h.y) << 4 | flags_of(h.z) << 8 | flags_of(h.w) << 12;
}
// Byte q of a chunk (q is a constant once the loops over a chunk are unrolled).
__device__ __forceinline__ unsigned chunk_byte(const uint4& v, int q) {
  const std::uint32_t word = q < 4 ? v.x : q < 8 ? v.y : q < 12 ? v.z : v.w;
  return word >> (8 * (q % 4)) & 0xffu;
}

// head and bit come padded to whole chunks (block_order), the padding holding no heads.
template <class M>
__global__ void __launch_bounds__(block_rows::threads)
    write_blocks(std::int64_t nnz, const std::uint8_t* __restrict__ head, const std::uint8_t* __restrict__ bit,
                 const I* __restrict__ head_col, const I* __restrict__ block_no, I* __restrict__ block_col,
                 M* __restrict__ bitmaps) {
  // The bits as one word: 32 of them unless the bitmap has 8 bytes (r*c <= 32 otherwise).
  using W = std::conditional_t<sizeof(M) == 8, std::uint64_t, std::uint32_t>;
  // The warp's blocks, by number from the first begun in its tile: bitmap, and head's position
  // in the tile.
  __shared__ M tile_maps[block_rows::warps_per_block][tile_positions];
  __shared__ std::uint16_t tile_heads[block_rows::warps_per_block][tile_positions];
  M* const maps = tile_maps[threadIdx.x / 32];
  std::uint16_t* const heads_in_tile = tile_heads[threadIdx.x / 32];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const auto* heads_at = reinterpret_cast<const uint4*>(head);
  const auto* bits_at = reinterpret_cast<const uint4*>(bit);
  const std::int64_t chunks = (nnz + chunk_positions - 1) / chunk_positions;
  for (std::int64_t tile = first_index() / 32; tile * tile_positions < nnz; tile += grid_stride() / 32) {
    const std::int64_t g = tile * 32 + lane, p0 = g * chunk_positions;
    // The blocks begun before the tile (block_no counts the heads up to the end of each 4-byte
    // word of flags), loaded first so that its latency passes under the work below.
    const I first = tile == 0 ? 0 : block_no[tile * (tile_positions / 4) - 1];
    const unsigned heads = g < chunks ? chunk_heads(heads_at[g]) : 0u;  // the padding holds none
    // The blocks begun in the tile before the lane's chunk: the heads of the lanes before it.
    const int own = __popc(heads), through = group_inclusive_sum(own);
    const int begun = __shfl_sync(block_rows::full_warp, through, 31), before = through - own;
    if (heads != 0) {
      const uint4 bits = bits_at[g];
      int b = before - 1;  // the block open, by number in the tile
      W acc = 0;
#pragma unroll
      for (int q = 0; q < chunk_positions; ++q) {
        if ((heads >> q) & 1u) {
          if (b >= before) maps[b] = static_cast<M>(acc);
          acc = 0;
          ++b;
          heads_in_tile[b] = static_cast<std::uint16_t>(lane * chunk_positions + q);
        }
        if (b >= before && p0 + q < nnz) acc |= W{1} << chunk_byte(bits, q);
      }
      // The chunk's last block runs on to the next head, or to nnz.
      for (std::int64_t k = g + 1; k * chunk_positions < nnz; ++k) {
        const unsigned next = chunk_heads(heads_at[k]);
        const uint4 more = bits_at[k];
        const std::int64_t end = min(std::int64_t{next != 0 ? __ffs(static_cast<int>(next)) - 1 : chunk_positions},
                                     nnz - k * chunk_positions);
#pragma unroll
        for (int q = 0; q < chunk_positions; ++q)
          if (q < end) acc |= W{1} << chunk_byte(more, q);
        if (end < chunk_positions) break;
      }
      maps[b] = static_cast<M>(acc);
    }
    __syncwarp();
    // Four blocks a lane at a time, their columns' loads issued together: graph-like matrices
    // begin hundreds of blocks in a tile.
    for (int i0 = 0; i0 < begun; i0 += 4 * 32) {
      I cols[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = i0 + 32 * u + lane;
        if (i < begun) cols[u] = head_col[tile * tile_positions + heads_in_tile[i]];
      }
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int i = i0 + 32 * u + lane;
        if (i < begun) {
          bitmaps[first + i] = maps[i];
          block_col[first + i] = cols[u];
        }
      }
    }
    __syncwarp();  // the next tile's blocks overwrite these
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
  // The one wait before the end: the block count sizes the block arrays. It waits for the
  // count's copy alone, so the device writes the block pointers meanwhile.
  const I blocks = static_cast<const I*>(ctx.wait_copies_back())[0];
  out.block_col_idx.resize(blocks);
  out.bitmaps.resize(static_cast<std::size_t>(blocks) * w);
  // Bitmap b starts at byte b * w of an allocation aligned to far more than w: one word each.
  with_bitmap_type(w, [&](auto word) {
    using M = decltype(word);
    write_blocks<M><<<launch_blocks((nnz + tile_positions - 1) / tile_positions * 32, block_rows::threads),
                      block_rows::threads, 0, stream_of(ctx)>>>(nnz, order.head.data(), order.place.data(),
                                                                order.head_col.data(), order.block_no.data(),
                                                                out.block_col_idx.data(),
                                                                reinterpret_cast<M*>(out.bitmaps.data()));
  });
  block_rows::check_launch(who, "writing the blocks");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) \
  template mbr<V, I, device> csr_to_mbr<V>(const csr<V, I, device>&, const mbr_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
