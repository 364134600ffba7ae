// CSR -> BCSR on the GPU (specs/formats/bcsr.md, "GPU"; liu-thesis-csr5.txt sec. 5.4.4).
// The result equals cpu::csr_to_bcsr bit for bit.
// The CPU merges the r sorted rows of a block row; its blocks are the distinct block columns
// of the block row's entries, in increasing order. The entries in block order (block column,
// then row, then column; convert/gpu/block_rows.cuh) number those blocks and give each
// entry's offset i*c + j inside its block; values are staged in that order, then each moves
// to its block's r*c values, which start as +0.0 fill. In block order the positions in
// `values` increase (blocks in order, offsets increasing inside a block), so the +0.0
// entries, selected in that order, are already the sorted stored_zeros list the CPU builds.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <string>

#include "convert/gpu/bcsr.hpp"
#include "convert/gpu/block_rows.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;

// The entry at block-order position t to its block's value at offset place[t]; a head also
// writes its block's column.
template <class V>
__global__ void place_values(std::int64_t nnz, const V* staged, const std::uint8_t* head, const std::uint8_t* place,
                             const I* head_col, const I* block_no, std::int64_t rc, I* block_col, V* values) {
  for (std::int64_t t = first_index(); t < nnz; t += grid_stride()) {
    const std::int64_t b = block_rows::block_number(block_no, head, t) - 1;
    values[b * rc + place[t]] = staged[t];
    if (head[t]) block_col[b] = head_col[t];
  }
}

// The position in values of the entry at block-order position t (< bcsr_max_values, so 32-bit).
struct value_position {
  const I* block_no;
  const std::uint8_t* head;
  const std::uint8_t* place;
  I rc;
  __device__ I operator()(I t) const { return (block_rows::block_number(block_no, head, t) - 1) * rc + place[t]; }
};

// 1 where the entry at a value position is a stored +0.0 (its bits are the fill's), else 0: the
// flag that counts them and the predicate that selects them.
template <class V>
struct stored_zero {
  const V* values;
  __device__ I operator()(I position) const { return block_rows::all_bits_zero(values[position]) ? 1 : 0; }
};

// 1 x 1 blocks: every entry is its own block, in CSR order (no fill: a block holds exactly its
// entry), so block_ptr, block_col and values are CSR's arrays and stored_zeros lists the
// positions of the +0.0 entries. The automatic block size of 19 of the 20 real matrices; the
// block ordering took 5.6 cuSPARSE SpMV-times there (H200, stop 32 device call 2).
template <class V>
void unit_blocks(const csr<V, I, device>& a, bcsr<V, I, device>& out, gpu_context& ctx, const std::string& who) {
  const cudaStream_t s = stream_of(ctx);
  const std::int64_t nnz = a.nnz();
  out.block_col.resize(nnz);
  out.values.resize(nnz);
  copy_on_device(out.block_ptr.data(), a.row_ptr.data(), a.rows + 1, ctx, who + ": copying row_ptr");
  copy_on_device(out.block_col.data(), a.col_idx.data(), nnz, ctx, who + ": copying col_idx");
  copy_on_device(out.values.data(), a.values.data(), nnz, ctx, who + ": copying values");
  device_array<I> zeros(1);
  const thrust::counting_iterator<I> positions(0);
  const auto flags = thrust::make_transform_iterator(positions, stored_zero<V>{a.values.data()});
  std::size_t bytes = 0;
  check_cuda(cub::DeviceReduce::Sum(nullptr, bytes, flags, zeros.data(), nnz, s), who + ": sizing the zero count");
  check_cuda(cub::DeviceReduce::Sum(ctx.workspace(bytes), bytes, flags, zeros.data(), nnz, s),
             who + ": counting the stored zeros");
  ctx.copy_back(0, zeros.data(), sizeof(I));
  out.stored_zeros.resize(static_cast<const I*>(ctx.wait_copies_back())[0]);
  if (out.stored_zeros.size() == 0) return;
  check_cuda(cub::DeviceSelect::If(nullptr, bytes, positions, out.stored_zeros.data(), zeros.data(), nnz,
                                   stored_zero<V>{a.values.data()}, s),
             who + ": sizing the stored-zero selection");
  check_cuda(cub::DeviceSelect::If(ctx.workspace(bytes), bytes, positions, out.stored_zeros.data(), zeros.data(), nnz,
                                   stored_zero<V>{a.values.data()}, s),
             who + ": selecting the stored zeros");
}

void check_side(const char* field, std::int32_t v) {
  if (v < 1 || v > bcsr_max_block)
    fail(errc::usage, std::string("gpu::csr_to_bcsr: ") + field + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(bcsr_max_block) +
                          "]: pass a resolved block size (cpu::resolve_bcsr_params chooses the automatic sides)");
}

}  // namespace

template <class V>
bcsr<V, I, device> csr_to_bcsr(const csr<V, I, device>& a, const bcsr_params& resolved, gpu_context& ctx) {
  const std::string who = "gpu::csr_to_bcsr";
  check_side("block_rows", resolved.block_rows);
  check_side("block_cols", resolved.block_cols);
  const cudaStream_t s = stream_of(ctx);
  const int r = resolved.block_rows, c = resolved.block_cols;
  const std::int64_t rc = std::int64_t{r} * c, nnz = a.nnz(), mb = (a.rows + r - 1) / r;
  bcsr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = resolved;
  out.block_ptr.resize(mb + 1);
  if (rc == 1 && nnz > 0) {
    unit_blocks(a, out, ctx, who);
    ctx.synchronize();
    return out;
  }
  if (nnz == 0) {
    block_rows::order_by_blocks(a, r, c, static_cast<V*>(nullptr), nullptr, out.block_ptr.data(), nullptr, ctx, who);
    ctx.synchronize();
    return out;
  }
  device_array<V> staged(nnz);
  device_array<I> counts(2);  // the stored-zero selection's count, the entries whose bits are +0.0
  check_cuda(cudaMemsetAsync(counts.data(), 0, 2 * sizeof(I), s), who + ": clearing the counts");
  const block_rows::block_order order =
      block_rows::order_by_blocks(a, r, c, staged.data(), counts.data() + 1, out.block_ptr.data(), nullptr, ctx, who);
  // The one wait before the end: the counts size the block arrays and stored_zeros. It waits for
  // their copies alone, so the device writes the block pointers meanwhile.
  const I* back = static_cast<const I*>(ctx.wait_copies_back());
  const I nblocks = back[0], zeros = back[1];
  const std::int64_t nvalues = nblocks * rc, limit = bcsr_max_values(nnz, a.rows);
  if (nvalues > limit)
    fail(errc::unsupported,
         "bcsr: " + std::to_string(r) + " x " + std::to_string(c) + " blocks need " + std::to_string(nvalues) +
             " values for " + std::to_string(nnz) + " entries, beyond the limit of " + std::to_string(limit) +
             " values (min(2^31 - 1, 64 * (nnz + rows + 1) + 2^20)); use a smaller block size or 0 (automatic)");

  out.block_col.resize(nblocks);
  out.values.resize(nvalues);
  out.stored_zeros.resize(zeros);
  check_cuda(cudaMemsetAsync(out.values.data(), 0, nvalues * sizeof(V), s), who + ": +0.0 fill");
  place_values<V><<<launch_blocks(nnz, block_rows::threads), block_rows::threads, 0, s>>>(
      nnz, staged.data(), order.head.data(), order.place.data(), order.head_col.data(), order.block_no.data(), rc,
      out.block_col.data(), out.values.data());
  block_rows::check_launch(who, "filling the blocks");
  if (zeros > 0) {
    const auto positions = thrust::make_transform_iterator(
        thrust::counting_iterator<I>(0),
        value_position{order.block_no.data(), order.head.data(), order.place.data(), static_cast<I>(rc)});
    std::size_t bytes = 0;
    check_cuda(cub::DeviceSelect::If(nullptr, bytes, positions, out.stored_zeros.data(), counts.data(), nnz,
                                     stored_zero<V>{out.values.data()}, s),
               who + ": sizing the stored-zero selection");
    check_cuda(cub::DeviceSelect::If(ctx.workspace(bytes), bytes, positions, out.stored_zeros.data(), counts.data(),
                                     nnz, stored_zero<V>{out.values.data()}, s),
               who + ": selecting the stored zeros");
  }
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V)                                                                               \
  template bcsr<V, I, device> csr_to_bcsr<V>(const csr<V, I, device>&, const bcsr_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
