// MBR -> canonical CSR on the GPU (shared/papers/mbr-kannan.txt sec. III; specs/formats/mbr.md,
// section "GPU"). The result equals cpu::mbr_to_csr bit for bit.
// One thread per matrix row, the same walk as the GPU SpMV (kernels/gpu/spmv_mbr.cu): row
// i of block row br visits the blocks of br in stored order (increasing block column) and
// takes its slice of each bitmap (bits i*c .. i*c + c - 1, convert/gpu/mbr_rows.cuh); its
// values in a block start after the block's lower set bits. Pass 1 counts each row's set
// bits, an exclusive scan (cub) gives row_ptr, pass 2 writes each row's columns and values in
// increasing column, which is canonical CSR. Rows are independent and each is written by one
// thread, so the result is deterministic. Each bitmap is read as one word of its own width (a
// byte at a time, stop 26's walk issued up to 8 loads a block).
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <string>

#include "convert/gpu/mbr.hpp"
#include "convert/gpu/mbr_rows.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
constexpr int block_threads = 256;

// length[row] = the row's set bits over its block row; length[rows] = 0 (the scan's total).
template <class M>
__global__ void row_lengths(std::int64_t rows, int r, int c, const I* block_row_ptr, const M* bitmaps, I* length) {
  for (std::int64_t row = first_index(); row <= rows; row += grid_stride()) {
    if (row == rows) {
      length[row] = 0;
      continue;
    }
    const std::int64_t br = row / r;
    const int i = static_cast<int>(row - br * r);
    I n = 0;
#pragma unroll 4
    for (I b = block_row_ptr[br], end = block_row_ptr[br + 1]; b < end; ++b)
      n += __popcll(mbr_row_of(static_cast<std::uint64_t>(bitmaps[b]), i, c).cols);
    length[row] = n;
  }
}

template <class M, class V>
__global__ void write_rows(std::int64_t rows, int r, int c, const I* block_row_ptr, const I* block_col_idx,
                           const M* bitmaps, const I* value_ptr, const V* values, const I* row_ptr, I* col_idx,
                           V* out_values) {
  for (std::int64_t row = first_index(); row < rows; row += grid_stride()) {
    const std::int64_t br = row / r;
    const int i = static_cast<int>(row - br * r);
    I k = row_ptr[row], v = value_ptr[br];
    for (I b = block_row_ptr[br], end = block_row_ptr[br + 1]; b < end; ++b) {
      const auto map = static_cast<std::uint64_t>(bitmaps[b]);
      const mbr_row_bits part = mbr_row_of(map, i, c);
      const I base = block_col_idx[b] * c;
      I u = v + part.before;
      for (std::uint64_t bits = part.cols; bits; bits &= bits - 1, ++k, ++u) {
        col_idx[k] = base + (__ffsll(static_cast<long long>(bits)) - 1);
        out_values[k] = values[u];
      }
      v += __popcll(map);
    }
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::mbr_to_csr: ") + what); }

}  // namespace

template <class V>
csr<V, I, device> mbr_to_csr(const mbr<V, I, device>& a, gpu_context& ctx) {
  const int r = a.params.block_rows, c = a.params.block_cols, w = a.params.bitmap_bytes;
  if (r < 1 || c < 1 || r * c > 64 || w != mbr_bitmap_bytes(static_cast<std::int64_t>(r) * c))
    fail(errc::usage, "gpu::mbr_to_csr: block size " + std::to_string(r) + " x " + std::to_string(c) +
                          " with bitmap_bytes " + std::to_string(w) + " is not a valid mbr block");
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  const std::int64_t nnz = a.nnz();
  csr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  device_array<I> length(a.rows + 1);
  const unsigned row_blocks = launch_blocks(a.rows + 1, block_threads);
  with_bitmap_type(w, [&](auto word) {
    row_lengths<<<row_blocks, block_threads, 0, s>>>(
        a.rows, r, c, a.block_row_ptr.data(), reinterpret_cast<const decltype(word)*>(a.bitmaps.data()), length.data());
  });
  check_launch("counting row lengths");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, length.data(), out.row_ptr.data(), a.rows + 1, s),
             "gpu::mbr_to_csr: sizing the scan");
  check_cuda(
      cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, length.data(), out.row_ptr.data(), a.rows + 1, s),
      "gpu::mbr_to_csr: building row_ptr");
  with_bitmap_type(w, [&](auto word) {
    write_rows<<<row_blocks, block_threads, 0, s>>>(
        a.rows, r, c, a.block_row_ptr.data(), a.block_col_idx.data(),
        reinterpret_cast<const decltype(word)*>(a.bitmaps.data()), a.value_ptr.data(), a.values.data(),
        out.row_ptr.data(), out.col_idx.data(), out.values.data());
  });
  check_launch("writing rows");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) template csr<V, I, device> mbr_to_csr<V>(const mbr<V, I, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
