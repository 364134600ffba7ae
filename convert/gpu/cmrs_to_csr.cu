// CMRS -> canonical CSR on the GPU (shared/papers/cmrs-koza.txt sec. 3: "the conversion
// between the CRS and CMRS formats is trivial and easy to parallelize"; specs/formats/cmrs.md,
// section "GPU"). The result equals cpu::cmrs_to_csr bit for bit.
// Every CSR entry k is produced by one thread from the slot that holds it:
//  * basic layout in CSR order: slot k itself (strip_ptr is also the CSR offset);
//  * basic layout with sort_columns: the slots of each strip are put back into (row,
//    column) order by a segmented sort on the word rotated to row << 28 | column (unique
//    keys within a strip, so the order is the CPU counting sort's);
//  * sec. 6.7 layout: slot entry_slot[k]; unnamed slots are padding and are never read.
// The entry's row is strip * height + row in strip, where the strip is found by binary search
// in strip_ptr; the rows come out non-decreasing in k, so row_ptr[r] is a binary search for
// the first entry of a row >= r (one thread per row, no atomics).
#include <cuda_runtime.h>

#include <cub/device/device_segmented_sort.cuh>
#include <string>

#include "convert/gpu/cmrs.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"
#include "kernels/gpu/search.cuh"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;

// Row << 28 | column: sorting a strip by it gives (row, column) order.
__global__ void row_major_keys(std::uint32_t* keys, I* slots, const std::uint32_t* words, std::int64_t n) {
  for (std::int64_t s = first_index(); s < n; s += grid_stride()) {
    keys[s] = (words[s] >> cmrs_row_bits) | (words[s] << (32 - cmrs_row_bits));
    slots[s] = static_cast<I>(s);
  }
}

// Entry k: its slot (entry_slot, a sorted permutation, or k itself), then row, column, value.
template <class V>
__global__ void gather_entries(std::int64_t nnz, const I* slot_of, const I* strip_ptr, std::int64_t strips, int height,
                               const std::uint32_t* words, const V* values, I* row_of, I* col_idx, V* out_values) {
  for (std::int64_t k = first_index(); k < nnz; k += grid_stride()) {
    const std::int64_t s = slot_of ? slot_of[k] : k;
    const std::int64_t strip = upper_bound(strip_ptr, 0, strips + 1, s) - 1;
    const std::uint32_t w = words[s];
    row_of[k] = static_cast<I>(strip * height + static_cast<std::int64_t>(w & (cmrs_max_height - 1)));
    col_idx[k] = static_cast<I>(w >> cmrs_row_bits);
    out_values[k] = values[s];
  }
}

// row_ptr[r] = the first k whose row is >= r.
__global__ void row_pointers(I* row_ptr, std::int64_t rows, const I* row_of, std::int64_t nnz) {
  for (std::int64_t r = first_index(); r <= rows; r += grid_stride()) {
    row_ptr[r] = static_cast<I>(lower_bound(row_of, 0, nnz, r));
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::cmrs_to_csr: ") + what); }

}  // namespace

template <class V>
csr<V, I, device> cmrs_to_csr(const cmrs<V, I, device>& a, gpu_context& ctx) {
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const int h = a.params.height;
  if (h < 1 || h > cmrs_max_height)
    fail(errc::usage, "gpu::cmrs_to_csr: height = " + std::to_string(h) + " is out of range [1, 16]");
  const std::int64_t strips = cmrs_strips(a.rows, h), nnz = a.nnz();
  const bool reordered = a.params.modulo < cmrs_warp;
  csr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  if (nnz == 0) {
    check_cuda(cudaMemsetAsync(out.row_ptr.data(), 0, (a.rows + 1) * sizeof(I), s), "gpu::cmrs_to_csr: zero row_ptr");
    ctx.synchronize();
    return out;
  }

  const I* slot_of = reordered ? a.entry_slot.data() : nullptr;
  device_array<std::uint32_t> keys, sorted_keys;
  device_array<I> slots, sorted_slots;
  if (!reordered && a.params.sort_columns) {
    keys.resize(nnz);
    sorted_keys.resize(nnz);
    slots.resize(nnz);
    sorted_slots.resize(nnz);
    row_major_keys<<<launch_blocks(nnz, block_threads), block_threads, 0, s>>>(keys.data(), slots.data(),
                                                                               a.col_row.data(), nnz);
    check_launch("building row-major keys");
    std::size_t bytes = 0;
    check_cuda(cub::DeviceSegmentedSort::SortPairs(nullptr, bytes, keys.data(), sorted_keys.data(), slots.data(),
                                                   sorted_slots.data(), nnz, strips, a.strip_ptr.data(),
                                                   a.strip_ptr.data() + 1, s),
               "gpu::cmrs_to_csr: sizing the strip sort");
    check_cuda(cub::DeviceSegmentedSort::SortPairs(ctx.workspace(bytes), bytes, keys.data(), sorted_keys.data(),
                                                   slots.data(), sorted_slots.data(), nnz, strips,
                                                   a.strip_ptr.data(), a.strip_ptr.data() + 1, s),
               "gpu::cmrs_to_csr: sorting strips by row");
    slot_of = sorted_slots.data();
  }

  device_array<I> row_of(nnz);
  gather_entries<<<launch_blocks(nnz, block_threads), block_threads, 0, s>>>(
      nnz, slot_of, a.strip_ptr.data(), strips, h, a.col_row.data(), a.values.data(), row_of.data(),
      out.col_idx.data(), out.values.data());
  check_launch("gathering entries");
  row_pointers<<<launch_blocks(a.rows + 1, block_threads), block_threads, 0, s>>>(out.row_ptr.data(), a.rows,
                                                                                  row_of.data(), nnz);
  check_launch("building row_ptr");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) template csr<V, I, device> cmrs_to_csr<V>(const cmrs<V, I, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
