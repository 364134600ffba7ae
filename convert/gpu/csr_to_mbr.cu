// CSR -> MBR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"). The result equals cpu::csr_to_mbr bit for bit.
// MBR stores a block row's blocks by block column and a block's values by bit i*c + j, i.e.
// the entries in block order (convert/gpu/block_rows.cuh): that pass writes every value
// straight to its MBR position, value_ptr[br] = row_ptr[br * r] (block rows cover
// consecutive rows) and block_row_ptr from the block numbers. Then each block's column and
// bitmap (the OR of its entries' bits, stored little-endian in bitmap_bytes bytes) are written
// by the lane of its head, the bits gathered across the lanes of a warp.
#include <cuda_runtime.h>

#include <string>

#include "convert/cpu/mbr.hpp"
#include "convert/gpu/block_rows.cuh"
#include "convert/gpu/mbr.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;

// Each block's column and bitmap, written by the lane of its head (block-order position t).
// A warp takes 32 consecutive positions; a block's entries are consecutive there (up to the
// next head), so a segmented OR over the lanes, by shuffles, gives each head lane its block's
// bits up to the warp's end. The last block of the warp may go on past it: r*c <= 64 entries,
// so at most two more steps of 32 positions, up to the next head, complete it. Every bitmap is
// written once, by one lane, without atomics.
__global__ void write_blocks(std::int64_t nnz, const std::uint8_t* head, const std::uint8_t* bit, const I* head_col,
                             const I* block_no, int w, I* block_col, std::uint8_t* bitmaps) {
  constexpr unsigned full_warp = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (std::int64_t t0 = first_index() - lane; t0 < nnz; t0 += grid_stride()) {
    const std::int64_t t = t0 + lane;
    const bool inside = t < nnz;
    const bool opens = inside && head[t] != 0;
    // Past the end counts as a head: it closes the last block.
    const unsigned heads = __ballot_sync(full_warp, opens || !inside);
    std::uint64_t map = inside ? std::uint64_t{1} << bit[t] : 0;
    // After the step of d, map holds the bits of [lane, min(lane + 2d, next head)): a lane adds
    // its neighbour d lanes on while no head lies in lanes lane + 1 .. lane + d.
    for (int d = 1; d < 32; d *= 2) {
      const std::uint64_t more = __shfl_down_sync(full_warp, map, d);
      if (lane + d < 32 && ((heads >> (lane + 1)) & ((1u << d) - 1u)) == 0) map |= more;
    }
    // The rest of the warp's last block, from the positions after the warp's.
    std::uint64_t rest = 0;
    const int last = heads != 0 ? 31 - __clz(static_cast<int>(heads)) : -1;
    if (last >= 0 && t0 + 32 < nnz) {
      for (std::int64_t u0 = t0 + 32;; u0 += 32) {
        const std::int64_t u = u0 + lane;
        const unsigned ends = __ballot_sync(full_warp, u >= nnz || head[u] != 0);
        const int stop = ends != 0 ? __ffs(static_cast<int>(ends)) - 1 : 32;
        const std::uint64_t mine = lane < stop ? std::uint64_t{1} << bit[u] : 0;
        rest |= std::uint64_t{__reduce_or_sync(full_warp, static_cast<unsigned>(mine))} |
                std::uint64_t{__reduce_or_sync(full_warp, static_cast<unsigned>(mine >> 32))} << 32;
        if (ends != 0) break;
      }
    }
    if (opens) {
      if (lane == last) map |= rest;
      const std::int64_t b = block_no[t] - 1;
      block_col[b] = head_col[t];
      for (int byte = 0; byte < w; ++byte) bitmaps[b * w + byte] = static_cast<std::uint8_t>(map >> (8 * byte));
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
  write_blocks<<<launch_blocks(nnz, block_rows::threads), block_rows::threads, 0, stream_of(ctx)>>>(
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
