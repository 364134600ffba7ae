// CCOO -> canonical CSR on the GPU (specs/formats/ccoo.md, "GPU"), byte-identical to
// cpu::ccoo_to_csr. As on the CPU: each chunk's stored entries (those its pad bitmap does not
// mark) are counted and the counts scanned, so every chunk knows where its entries go; then
// one thread block per chunk decodes its blob, a thread per entry, ranking the kept entries
// of each round with a warp ballot. A row's end is written where its last group is: inside a
// chunk where the row offset steps, or at the chunk's end when the next chunk starts another
// row.
#include <cuda_runtime.h>

#include <algorithm>
#include <cub/device/device_scan.cuh>
#include <string>

#include "convert/gpu/ccoo.hpp"
#include "convert/gpu/ccoo_device.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
using ccoo_device::section;
constexpr int block_threads = 256;
constexpr int warps_per_block = block_threads / 32;

// The chunks' shared description.
struct chunks_view {
  const std::uint8_t* format;
  const I* row;
  const I* col;
  const std::uint64_t* ptr;
  const std::uint8_t* blob;
  std::int64_t chunks, entries, per_chunk;  // per_chunk = B*K
  int k;
};

__device__ __forceinline__ std::int64_t chunk_entries(const chunks_view& m, std::int64_t c) {
  return ccoo_device::chunk_entries(m.entries, m.per_chunk, c);
}

// kept[c] = the chunk's entries minus its marked padding; kept[chunks] = 0 (set by the host).
template <class V>
__global__ void count_kept(chunks_view m, I* kept) {
  __shared__ int pads;
  const std::int64_t c = blockIdx.x;
  const std::uint8_t code = m.format[c];
  const std::int64_t e_count = chunk_entries(m, c);
  if (threadIdx.x == 0) pads = 0;
  __syncthreads();
  if (code & ccoo_code::pads) {
    const std::uint8_t* bitmap = m.blob + m.ptr[c] + ccoo_device::chunk_section(e_count, m.k, code, sizeof(V)).pads;
    int n = 0;
    for (std::int64_t i = threadIdx.x; i < (e_count + 7) / 8; i += blockDim.x) n += __popc(bitmap[i]);
    atomicAdd(&pads, n);
  }
  __syncthreads();
  if (threadIdx.x == 0) kept[c] = static_cast<I>(e_count - pads);
}

template <class V>
__global__ void decode(chunks_view m, const V* table, int table_size, const I* start, I* row_ptr,
                       I* col_idx, V* values) {
  __shared__ V s_table[ccoo_table_capacity];
  __shared__ int warp_kept[warps_per_block];
  const std::int64_t c = blockIdx.x;
  const std::uint8_t code = m.format[c];
  const bool lut = code & ccoo_code::lut;
  const std::int64_t e_count = chunk_entries(m, c);
  const section l = ccoo_device::chunk_section(e_count, m.k, code, sizeof(V));
  const std::uint8_t* p = m.blob + m.ptr[c];
  const std::uint8_t* roff = (code & ccoo_code::single_row) ? nullptr : p + l.rows;
  const std::uint8_t* bitmap = (code & ccoo_code::pads) ? p + l.pads : nullptr;
  const std::int64_t base_row = m.row[c], base_col = m.col[c];
  if (lut)
    for (int i = threadIdx.x; i < table_size; i += blockDim.x) s_table[i] = table[i];
  if (c == 0 && threadIdx.x == 0) row_ptr[0] = 0;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  std::int64_t before = start[c];  // kept entries of the chunk before this round
  __syncthreads();
  // The bound is the same for every thread, so whole warps reach the ballot and every
  // thread reaches the barriers.
  for (std::int64_t e0 = 0; e0 < e_count; e0 += blockDim.x) {
    const std::int64_t e = e0 + threadIdx.x;
    const bool valid = e < e_count, keep = valid && !ccoo_device::is_pad(bitmap, e);
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_kept[warp] = __popc(mask);
    __syncthreads();
    std::int64_t pos = before + __popc(mask & ((1u << lane) - 1u)), round = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (w < warp) pos += warp_kept[w];
      round += warp_kept[w];
    }
    if (keep) {
      col_idx[pos] = static_cast<I>(base_col + ccoo_device::col_offset(p + l.cols, l.col_bytes, e));
      values[pos] = lut ? s_table[p[l.values + e]] : reinterpret_cast<const V*>(p + l.values)[e];
    }
    // A group whose row offset differs from the previous group's starts the next row: the
    // previous row ends before this entry (pos counts the kept entries before it).
    if (valid && roff && e % m.k == 0 && e > 0) {
      const std::int64_t g = e / m.k;
      if (roff[g] != roff[g - 1]) row_ptr[base_row + roff[g - 1] + 1] = static_cast<I>(pos);
    }
    before += round;
    __syncthreads();  // warp_kept is rewritten in the next round
  }
  if (threadIdx.x == 0) {
    const std::int64_t last_row = base_row + (roff ? roff[e_count / m.k - 1] : 0);
    // The last row ends here unless the next chunk continues it.
    if (c + 1 == m.chunks || m.row[c + 1] != last_row) row_ptr[last_row + 1] = start[c + 1];
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::ccoo_to_csr: ") + what); }

}  // namespace

template <class V>
csr<V, I, device> ccoo_to_csr(const ccoo<V, I, device>& a, gpu_context& ctx) {
  const cudaStream_t s = stream_of(ctx);
  std::int64_t counts[2] = {0, 0};  // {entries, stored entries}
  if (a.counts.size() == 2) a.counts.download(counts);
  const std::int64_t chunks = static_cast<std::int64_t>(a.chunk_format.size()), nnz = counts[1];
  csr<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr.resize(a.rows + 1);
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  if (chunks == 0) {
    check_cuda(cudaMemsetAsync(out.row_ptr.data(), 0, (a.rows + 1) * sizeof(I), s), "gpu::ccoo_to_csr: zero row_ptr");
    ctx.synchronize();
    return out;
  }
  const chunks_view m{a.chunk_format.data(), a.chunk_row.data(), a.chunk_col.data(), a.chunk_ptr.data(),
                      a.blob.data(), chunks, counts[0], std::int64_t{a.params.chunk_b} * a.params.chunk_k,
                      a.params.chunk_k};
  // A thread per entry of a chunk, at most block_threads (the rest loop), whole warps.
  const int threads = static_cast<int>(std::min<std::int64_t>(block_threads, (m.per_chunk + 31) / 32 * 32));

  // Where each chunk's entries start: an exclusive scan of the kept counts behind a final 0.
  device_array<I> kept(chunks + 1), start(chunks + 1);
  check_cuda(cudaMemsetAsync(kept.data() + chunks, 0, sizeof(I), s), "gpu::ccoo_to_csr: clearing the count");
  count_kept<V><<<static_cast<unsigned>(chunks), threads, 0, s>>>(m, kept.data());
  check_launch("counting stored entries");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, kept.data(), start.data(), chunks + 1, s),
             "gpu::ccoo_to_csr: sizing the scan");
  check_cuda(cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, kept.data(), start.data(), chunks + 1, s),
             "gpu::ccoo_to_csr: scan");
  decode<V><<<static_cast<unsigned>(chunks), threads, 0, s>>>(
      m, a.table.data(), static_cast<int>(a.table.size()), start.data(), out.row_ptr.data(), out.col_idx.data(),
      out.values.data());
  check_launch("decoding the chunks");
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) template csr<V, I, device> ccoo_to_csr<V>(const ccoo<V, I, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
