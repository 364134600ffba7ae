// CSR -> CCOO on the GPU (specs/formats/ccoo.md, "GPU"; Aliaga et al., Euro-Par 2020
// Workshops, Sect. 2), byte-identical to cpu::csr_to_ccoo. The same steps as the CPU, each a
// device primitive or one thread block per chunk (the paper's unit of work):
//   1. groups per row, exclusive scan (cub) -> the first group of every row;
//   2. the value table: radix sort of the values' bit patterns, run-length encoding (cub),
//      +0.0 credited with the padding entries, then a stable descending radix sort of the
//      counts, which keeps equal counts in ascending bit order: the first min(256, distinct)
//      patterns are the canonical table (ccoo_value_table);
//   3. per chunk (one block): rows, column range, padding and table coverage -> the format
//      code, baselines and blob size; the sizes are scanned into chunk_ptr;
//   4. per chunk (one block): the blob, written into a zeroed buffer (zero filler for free).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "convert/gpu/ccoo.hpp"
#include "convert/gpu/ccoo_device.cuh"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

using I = std::int32_t;
using ccoo_device::section;
constexpr int block_threads = 256;
constexpr int max_groups = ccoo_max_chunk_b;  // groups of one chunk, one block

// Groups of row r: max(1, ceil(len / K)); one extra 0 at the end makes the exclusive scan
// also return the total.
__global__ void row_groups(const I* row_ptr, std::int64_t rows, std::int64_t k, std::int64_t* groups) {
  for (std::int64_t r = first_index(); r <= rows; r += grid_stride()) {
    if (r == rows) {
      groups[r] = 0;
      continue;
    }
    const std::int64_t len = row_ptr[r + 1] - row_ptr[r];
    groups[r] = len == 0 ? 1 : (len + k - 1) / k;
  }
}

// What one chunk needs to visit its entries: for each of its groups, the row and the CSR
// positions [first, end) the group reads (positions >= end are the row's padding).
struct chunk_groups {
  int row[max_groups];
  long long first[max_groups], end[max_groups];
};

// The matrix and chunking, shared by both chunk kernels.
template <class V>
struct source {
  const I* row_ptr;
  const I* col_idx;
  const V* values;
  const std::int64_t* group_start;  // rows + 1
  std::int64_t rows, groups, entries;
  int b, k;
  std::int64_t chunks;
};

// Fills g (for the chunk's groups) and returns the chunk's entry count. Ends with a barrier.
template <class V>
__device__ std::int64_t load_groups(const source<V>& m, std::int64_t c, chunk_groups& g) {
  const std::int64_t g0 = c * m.b, count = min(static_cast<long long>(m.b), static_cast<long long>(m.groups - g0));
  for (std::int64_t t = threadIdx.x; t < count; t += blockDim.x) {
    const std::int64_t gg = g0 + t;
    std::int64_t lo = 0, hi = m.rows + 1;  // the last row whose first group is <= gg
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (m.group_start[mid] <= gg) lo = mid + 1;
      else hi = mid;
    }
    const std::int64_t r = lo - 1;
    g.row[t] = static_cast<int>(r);
    g.first[t] = m.row_ptr[r] + (gg - m.group_start[r]) * m.k;
    g.end[t] = m.row_ptr[r + 1];
  }
  __syncthreads();
  return count * m.k;
}

// The index of `bits` in the table (sorted bits with their table positions), or -1.
template <class B>
__device__ __forceinline__ int table_index(const B* sorted_bits, const std::uint8_t* index, int n, B bits) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (sorted_bits[mid] < bits) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && sorted_bits[lo] == bits ? index[lo] : -1;
}

template <class B>
__device__ void load_lookup(const B* bits, const std::uint8_t* index, int n, B* s_bits, std::uint8_t* s_index) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    s_bits[i] = bits[i];
    s_index[i] = index[i];
  }
}

// Pass 1, one block per chunk (as the CPU's first pass): format code, baselines, blob size.
template <class V>
__global__ void chunk_codes(source<V> m, const ccoo_bits<V>* lookup_bits, const std::uint8_t* lookup_index,
                            int table_size, int zero_index, std::uint8_t* chunk_format, I* chunk_row, I* chunk_col,
                            std::uint64_t* sizes, int* any_lut) {
  using B = ccoo_bits<V>;
  __shared__ chunk_groups g;
  __shared__ B s_bits[ccoo_table_capacity];
  __shared__ std::uint8_t s_index[ccoo_table_capacity];
  __shared__ int s_min, s_max;
  const std::int64_t c = blockIdx.x;
  if (threadIdx.x == 0) {
    s_min = INT_MAX;
    s_max = -1;
  }
  load_lookup(lookup_bits, lookup_index, table_size, s_bits, s_index);
  const std::int64_t e_count = load_groups(m, c, g);  // its barrier also covers the loads above

  int lo_col = INT_MAX, hi_col = -1;
  bool padded = false, covered = true;
  for (std::int64_t e = threadIdx.x; e < e_count; e += blockDim.x) {
    const std::int64_t gi = e / m.k, pos = g.first[gi] + (e - gi * m.k);
    if (pos >= g.end[gi]) {
      padded = true;
      covered = covered && zero_index >= 0;
      continue;
    }
    const int col = m.col_idx[pos];
    lo_col = min(lo_col, col);
    hi_col = max(hi_col, col);
    covered = covered && table_index(s_bits, s_index, table_size, reinterpret_cast<const B*>(m.values)[pos]) >= 0;
  }
  if (hi_col >= 0) {
    atomicMin(&s_min, lo_col);
    atomicMax(&s_max, hi_col);
  }
  const bool any_pad = __syncthreads_or(padded) != 0;
  const bool all_covered = __syncthreads_and(covered) != 0;  // also orders the atomics above
  if (threadIdx.x != 0) return;
  // Offsets from the smallest stored column (0 without one), so they are unsigned.
  const long long max_off = s_max < 0 ? 0 : static_cast<long long>(s_max) - s_min;
  const int width = max_off <= 0xFF ? 0 : max_off <= 0xFFFF ? 1 : 2;
  std::uint8_t code = static_cast<std::uint8_t>(width << 1);
  if (g.row[0] == g.row[e_count / m.k - 1]) code |= ccoo_code::single_row;
  if (all_covered) code |= ccoo_code::lut;
  if (any_pad) code |= ccoo_code::pads;
  chunk_format[c] = code;
  chunk_row[c] = g.row[0];
  chunk_col[c] = s_max < 0 ? 0 : s_min;
  sizes[c] = ccoo_device::chunk_section(e_count, m.k, code, sizeof(V)).size;
  if (all_covered) *any_lut = 1;  // every writer stores the same value
}

// Pass 2, one block per chunk: row offsets, pad bitmap, column offsets, values, into a blob
// that is zero already. Bitmap bytes are shared by neighbouring entries: each warp gathers
// the pad flags of its 32 consecutive entries with a ballot and one lane writes the 4 bytes.
template <class V>
__global__ void chunk_blobs(source<V> m, const ccoo_bits<V>* lookup_bits,
                            const std::uint8_t* lookup_index, int table_size, int zero_index,
                            const std::uint8_t* chunk_format, const I* chunk_row, const I* chunk_col,
                            const std::uint64_t* chunk_ptr, std::uint8_t* blob) {
  using B = ccoo_bits<V>;
  __shared__ chunk_groups g;
  __shared__ B s_bits[ccoo_table_capacity];
  __shared__ std::uint8_t s_index[ccoo_table_capacity];
  const std::int64_t c = blockIdx.x;
  const std::uint8_t code = chunk_format[c];
  const bool single = code & ccoo_code::single_row, lut = code & ccoo_code::lut, pads = code & ccoo_code::pads;
  if (lut) load_lookup(lookup_bits, lookup_index, table_size, s_bits, s_index);
  const std::int64_t e_count = load_groups(m, c, g);
  const section l = ccoo_device::chunk_section(e_count, m.k, code, sizeof(V));
  std::uint8_t* p = blob + chunk_ptr[c];
  const std::int64_t base_row = chunk_row[c], base_col = chunk_col[c];
  const int lane = threadIdx.x % 32;

  // The bound is the same for every thread, so whole warps reach the ballot.
  for (std::int64_t e0 = 0; e0 < e_count; e0 += blockDim.x) {
    const std::int64_t e = e0 + threadIdx.x;
    bool pad = false;
    if (e < e_count) {
      const std::int64_t gi = e / m.k, j = e - gi * m.k, pos = g.first[gi] + j;
      if (!single && j == 0) p[l.rows + gi] = static_cast<std::uint8_t>(g.row[gi] - base_row);
      pad = pos >= g.end[gi];
      if (pad) {
        // Column offset 0 and value +0.0 are already there; a table chunk stores +0.0's index.
        if (lut) p[l.values + e] = static_cast<std::uint8_t>(zero_index);
      } else {
        const auto off = static_cast<std::uint32_t>(m.col_idx[pos] - base_col);
        switch (l.col_bytes) {
          case 1: p[l.cols + e] = static_cast<std::uint8_t>(off); break;
          case 2: reinterpret_cast<std::uint16_t*>(p + l.cols)[e] = static_cast<std::uint16_t>(off); break;
          default: reinterpret_cast<std::uint32_t*>(p + l.cols)[e] = off; break;
        }
        const V v = m.values[pos];
        if (lut)
          p[l.values + e] = static_cast<std::uint8_t>(
              table_index(s_bits, s_index, table_size, reinterpret_cast<const B*>(m.values)[pos]));
        else
          reinterpret_cast<V*>(p + l.values)[e] = v;
      }
    }
    if (pads) {
      const unsigned mask = __ballot_sync(0xffffffffu, pad);
      // The warp's first entry is a multiple of 32: its flags fill 4 whole bitmap bytes,
      // of which those holding at least one entry are inside the bitmap.
      const std::int64_t w0 = e0 + (threadIdx.x - lane);
      if (lane == 0)
        for (int byte = 0; byte < 4 && w0 + 8 * byte < e_count; ++byte)
          p[l.pads + w0 / 8 + byte] = static_cast<std::uint8_t>(mask >> (8 * byte));
    }
  }
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("gpu::csr_to_ccoo: ") + what); }

template <class T>
T read_one(const T* device_ptr, gpu_context& ctx) {
  T v{};
  check_cuda(cudaMemcpyAsync(&v, device_ptr, sizeof(T), cudaMemcpyDeviceToHost, stream_of(ctx)),
             "gpu::csr_to_ccoo: reading back a result");
  ctx.synchronize();
  return v;
}

template <class T>
void upload(device_array<T>& d, const std::vector<T>& h) {
  d.upload(h.data(), h.size());
}

void check_param(const char* name, std::int32_t v, std::int32_t max) {
  if (v < 1 || v > max)
    fail(errc::usage, std::string("gpu::csr_to_ccoo: ") + name + " = " + std::to_string(v) + " is out of range [1, " +
                          std::to_string(max) +
                          "]: pass resolved parameters (cpu::resolve_ccoo_params chooses the automatic ones)");
}

// The canonical value table of the stored values plus `pads` +0.0 padding entries
// (ccoo_value_table), as bit patterns in table order.
template <class V>
std::vector<ccoo_bits<V>> value_table(const csr<V, I, device>& a, std::int64_t pads, gpu_context& ctx) {
  using B = ccoo_bits<V>;
  const cudaStream_t s = stream_of(ctx);
  const std::int64_t nnz = a.nnz();
  // Slot 0 is kept free for a +0.0 candidate made of padding alone, so that it can go in
  // front of the runs (bit pattern 0 is the smallest) without moving them.
  device_array<B> bits(nnz + 1), sorted(nnz);
  device_array<std::uint32_t> counts(nnz + 1);
  std::int64_t runs = 0;
  if (nnz > 0) {
    std::size_t bytes = 0;
    const auto* in = reinterpret_cast<const B*>(a.values.data());
    check_cuda(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, sorted.data(), nnz, 0, int{sizeof(B) * 8}, s),
               "gpu::csr_to_ccoo: sizing the value sort");
    check_cuda(cub::DeviceRadixSort::SortKeys(ctx.workspace(bytes), bytes, in, sorted.data(), nnz, 0,
                                              int{sizeof(B) * 8}, s),
               "gpu::csr_to_ccoo: value sort");
    device_array<int> num_runs(1);
    check_cuda(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, sorted.data(), bits.data() + 1, counts.data() + 1,
                                                  num_runs.data(), static_cast<int>(nnz), s),
               "gpu::csr_to_ccoo: sizing the value count");
    check_cuda(cub::DeviceRunLengthEncode::Encode(ctx.workspace(bytes), bytes, sorted.data(), bits.data() + 1,
                                                  counts.data() + 1, num_runs.data(), static_cast<int>(nnz), s),
               "gpu::csr_to_ccoo: value count");
    runs = read_one(num_runs.data(), ctx);
  }
  // Padding entries are +0.0 values and count as such. Counts stay below 2^31: they add up
  // to at most the entry count.
  std::int64_t first = 1, n = runs;
  if (pads > 0) {
    if (runs > 0 && read_one(bits.data() + 1, ctx) == B(0)) {
      const std::uint32_t zeros = read_one(counts.data() + 1, ctx) + static_cast<std::uint32_t>(pads);
      check_cuda(cudaMemcpyAsync(counts.data() + 1, &zeros, sizeof zeros, cudaMemcpyHostToDevice, s),
                 "gpu::csr_to_ccoo: counting padding");
    } else {
      const B zero_bits = 0;
      const auto pad_count = static_cast<std::uint32_t>(pads);
      check_cuda(cudaMemcpyAsync(bits.data(), &zero_bits, sizeof zero_bits, cudaMemcpyHostToDevice, s),
                 "gpu::csr_to_ccoo: adding +0.0 for padding");
      check_cuda(cudaMemcpyAsync(counts.data(), &pad_count, sizeof pad_count, cudaMemcpyHostToDevice, s),
                 "gpu::csr_to_ccoo: counting padding");
      first = 0;
      ++n;
    }
  }
  std::vector<B> table;
  if (n == 0) return table;
  // By count, descending; the sort is stable, so equal counts keep the ascending bit order
  // of the runs: the table's tie rule.
  device_array<std::uint32_t> counts_sorted(n);
  device_array<B> bits_sorted(n);
  std::size_t bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairsDescending(nullptr, bytes, counts.data() + first, counts_sorted.data(),
                                                       bits.data() + first, bits_sorted.data(), n, 0, 32, s),
             "gpu::csr_to_ccoo: sizing the count sort");
  check_cuda(cub::DeviceRadixSort::SortPairsDescending(ctx.workspace(bytes), bytes, counts.data() + first,
                                                       counts_sorted.data(), bits.data() + first, bits_sorted.data(),
                                                       n, 0, 32, s),
             "gpu::csr_to_ccoo: count sort");
  table.resize(static_cast<std::size_t>(std::min<std::int64_t>(n, ccoo_table_capacity)));
  check_cuda(cudaMemcpyAsync(table.data(), bits_sorted.data(), table.size() * sizeof(B), cudaMemcpyDeviceToHost, s),
             "gpu::csr_to_ccoo: reading the value table");
  ctx.synchronize();
  return table;
}

}  // namespace

template <class V>
ccoo<V, I, device> csr_to_ccoo(const csr<V, I, device>& a, const ccoo_params& resolved, gpu_context& ctx) {
  using B = ccoo_bits<V>;
  check_param("chunk_b", resolved.chunk_b, ccoo_max_chunk_b);
  check_param("chunk_k", resolved.chunk_k, ccoo_max_chunk_k);
  const cudaStream_t s = stream_of(ctx);
  ccoo<V, I, device> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.params = resolved;
  const std::int64_t nb = resolved.chunk_b, nk = resolved.chunk_k, nnz = a.nnz(), rows = a.rows;
  // Without rows or columns there is nothing to store and no column to pad with.
  if (a.rows == 0 || a.cols == 0) {
    upload(out.chunk_ptr, std::vector<std::uint64_t>{0});
    upload(out.counts, std::vector<std::int64_t>{0, 0});
    return out;
  }

  // 1. The first group of every row, and the entry count.
  device_array<std::int64_t> groups(rows + 1), group_start(rows + 1);
  row_groups<<<launch_blocks(rows + 1, block_threads), block_threads, 0, s>>>(a.row_ptr.data(), rows, nk,
                                                                              groups.data());
  check_launch("counting groups");
  std::size_t bytes = 0;
  check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, groups.data(), group_start.data(), rows + 1, s),
             "gpu::csr_to_ccoo: sizing the group scan");
  check_cuda(cub::DeviceScan::ExclusiveSum(ctx.workspace(bytes), bytes, groups.data(), group_start.data(), rows + 1, s),
             "gpu::csr_to_ccoo: group scan");
  const std::int64_t total_groups = read_one(group_start.data() + rows, ctx), entries = total_groups * nk;
  constexpr std::int64_t int32_limit = std::numeric_limits<std::int32_t>::max();
  if (entries > int32_limit)
    fail(errc::unsupported, "ccoo: " + std::to_string(entries) +
                                " entries after padding every row to a multiple of chunk_k = " + std::to_string(nk) +
                                " exceed the 32-bit entry count (at most " + std::to_string(int32_limit) +
                                "); use a smaller chunk_k");
  const std::int64_t chunks = (total_groups + nb - 1) / nb;

  // 2. The value table and its lookup by bit pattern (sorted bits with their positions).
  const std::vector<B> table = value_table(a, entries - nnz, ctx);
  std::vector<std::pair<B, std::uint8_t>> lookup(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) lookup[i] = {table[i], static_cast<std::uint8_t>(i)};
  std::sort(lookup.begin(), lookup.end());
  std::vector<B> lookup_bits(lookup.size());
  std::vector<std::uint8_t> lookup_index(lookup.size());
  int zero_index = -1;
  for (std::size_t i = 0; i < lookup.size(); ++i) {
    lookup_bits[i] = lookup[i].first;
    lookup_index[i] = lookup[i].second;
    if (lookup[i].first == B(0)) zero_index = lookup[i].second;
  }
  device_array<B> d_lookup_bits;
  device_array<std::uint8_t> d_lookup_index;
  upload(d_lookup_bits, lookup_bits);
  upload(d_lookup_index, lookup_index);
  const int table_size = static_cast<int>(table.size());

  // 3. Format codes, baselines, blob sizes; chunk_ptr by an inclusive scan behind a 0.
  const source<V> m{a.row_ptr.data(), a.col_idx.data(), a.values.data(), group_start.data(), rows, total_groups,
                    entries, static_cast<int>(nb), static_cast<int>(nk), chunks};
  const int threads = static_cast<int>(std::min<std::int64_t>(block_threads, (nb * nk + 31) / 32 * 32));
  out.chunk_format.resize(chunks);
  out.chunk_row.resize(chunks);
  out.chunk_col.resize(chunks);
  out.chunk_ptr.resize(chunks + 1);
  device_array<std::uint64_t> sizes(chunks);
  device_array<int> any_lut(1);
  check_cuda(cudaMemsetAsync(any_lut.data(), 0, sizeof(int), s), "gpu::csr_to_ccoo: clearing a flag");
  chunk_codes<V><<<static_cast<unsigned>(chunks), threads, 0, s>>>(
      m, d_lookup_bits.data(), d_lookup_index.data(), table_size, zero_index, out.chunk_format.data(),
      out.chunk_row.data(), out.chunk_col.data(), sizes.data(), any_lut.data());
  check_launch("choosing the chunk formats");
  check_cuda(cudaMemsetAsync(out.chunk_ptr.data(), 0, sizeof(std::uint64_t), s), "gpu::csr_to_ccoo: chunk_ptr[0]");
  check_cuda(cub::DeviceScan::InclusiveSum(nullptr, bytes, sizes.data(), out.chunk_ptr.data() + 1, chunks, s),
             "gpu::csr_to_ccoo: sizing the blob scan");
  check_cuda(cub::DeviceScan::InclusiveSum(ctx.workspace(bytes), bytes, sizes.data(), out.chunk_ptr.data() + 1,
                                           chunks, s),
             "gpu::csr_to_ccoo: blob scan");
  const std::uint64_t blob_bytes = read_one(out.chunk_ptr.data() + chunks, ctx);
  const bool table_used = read_one(any_lut.data(), ctx) != 0;

  // 4. The blobs.
  out.blob.resize(blob_bytes);
  check_cuda(cudaMemsetAsync(out.blob.data(), 0, blob_bytes, s), "gpu::csr_to_ccoo: zeroing the blobs");
  chunk_blobs<V><<<static_cast<unsigned>(chunks), threads, 0, s>>>(
      m, d_lookup_bits.data(), d_lookup_index.data(), table_size, zero_index, out.chunk_format.data(),
      out.chunk_row.data(), out.chunk_col.data(), out.chunk_ptr.data(), out.blob.data());
  check_launch("writing the blobs");
  if (table_used) {
    std::vector<V> values(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) values[i] = std::bit_cast<V>(table[i]);
    upload(out.table, values);
  }
  upload(out.counts, std::vector<std::int64_t>{entries, nnz});
  ctx.synchronize();
  return out;
}

#define SPCONV_INST(V) \
  template ccoo<V, I, device> csr_to_ccoo<V>(const csr<V, I, device>&, const ccoo_params&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
