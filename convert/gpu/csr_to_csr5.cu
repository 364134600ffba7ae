// CSR <-> CSR5 on the GPU (liu-thesis-csr5.txt sec. 6.3; the conversion steps of sec. 8.5.2:
// allocation, tile_ptr, tile_desc, transposition), byte-identical to the CPU converters.
//
// The CPU walks row_ptr once per block of tiles; a GPU thread per tile walking its rows would
// stall on a tile that spans 10^5 empty rows. Here every step is a flat kernel over rows,
// tiles or entries, and each stored field is derived from the rule the format defines
// (specs/formats/csr5.md), not from the CPU's walk:
//   rows    a non-empty row r sets the bit_flag bit of its first entry (an atomicOr into the
//           zeroed descriptor word); an empty row r marks the tile holding entry row_ptr[r] - 1,
//           the only tile it lies strictly inside (sec. 6.3.3: the "-0" tiles);
//   tiles   tile_ptr by a binary search per tile (Algorithm 24 line 3); per complete tile one
//           thread adds the always-set first flag (sec. 6.3.4), y_offset (flags in the lanes to
//           the left) and seg_offset (Algorithm 25: flag-free lanes to the right) and counts the
//           tile's segments;
//   scan    tile_desc_offset_ptr is the inclusive sum of the segment counts of the tiles with
//           empty rows (cub), after which the empty_offset length is known;
//   rows    each row starting inside such a tile writes its segment's empty_offset entry
//           (Algorithm 26), the segment index being y_offset plus the flags before it in its lane;
//   entries the in-place transposition of sec. 6.3.1 as a gather per stored position.
// Each field is a function of row_ptr alone (the values only move), so the result does not
// depend on the launch shape and equals the CPU's bit for bit.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "convert/gpu/csr5.hpp"
#include "formats/device_kernel.cuh"
#include "formats/instantiate.hpp"

namespace spconv::gpu {
namespace {

constexpr int block_threads = 256;

// The tile geometry every kernel needs, passed by value (csr5_layout's fields plus counts).
struct geometry {
  std::int64_t omega, sigma, T, complete, tiles, nnz, rows;
  int words, y_bits, seg_pos, seg_bits, flag_pos;
};

geometry make_geometry(const csr5_params& p, std::int64_t nnz, std::int64_t rows) {
  const csr5_layout L(p.omega, p.sigma);
  const std::int64_t T = L.tile_size();
  return {.omega = L.omega,
          .sigma = L.sigma,
          .T = T,
          .complete = nnz / T,
          .tiles = (nnz + T - 1) / T,
          .nnz = nnz,
          .rows = rows,
          .words = L.words,
          .y_bits = L.y_offset_bits,
          .seg_pos = L.seg_offset_pos(),
          .seg_bits = L.seg_offset_bits,
          .flag_pos = L.bit_flag_pos()};
}

// Bits [pos, pos + width) of a lane's descriptor bit string, whose 32-bit words lie `stride`
// apart (csr5_get_bits/csr5_put_bits of formats/csr5.hpp, on the device). put ORs, so fields
// may be written in any order into a zeroed descriptor.
__device__ std::uint64_t get_bits(const std::uint32_t* lane, std::int64_t stride, int pos, int width) {
  std::uint64_t v = 0;
  for (int got = 0; got < width;) {
    const int p = pos + got, bit = p % 32, take = min(32 - bit, width - got);
    v |= ((std::uint64_t{lane[(p / 32) * stride]} >> bit) & ((std::uint64_t{1} << take) - 1)) << got;
    got += take;
  }
  return v;
}

__device__ void put_bits(std::uint32_t* lane, std::int64_t stride, int pos, int width, std::uint64_t v) {
  for (int put = 0; put < width;) {
    const int p = pos + put, bit = p % 32, take = min(32 - bit, width - put);
    lane[(p / 32) * stride] |= static_cast<std::uint32_t>(((v >> put) & ((std::uint64_t{1} << take) - 1)) << bit);
    put += take;
  }
}

// Per row: the bit_flag bit of a row start inside a complete tile; the empty-rows mark of
// the tile an empty row lies in. An empty row r with row_ptr[r] = k > 0 follows entry k - 1,
// of tile t = (k - 1) / T: tile t starts at or before that entry's row (< r) and tile t + 1
// at or after entry k, whose row is > r, so r lies strictly between them (leading empty rows,
// k = 0, lie in no tile). Several rows may mark one tile: the same byte is written.
__global__ void mark_rows(geometry g, const std::int32_t* row_ptr, std::uint32_t* tile_desc,
                          std::uint8_t* spans_empty) {
  for (std::int64_t r = first_index(); r < g.rows; r += grid_stride()) {
    const std::int64_t b = row_ptr[r], e = row_ptr[r + 1];
    if (b == e) {
      if (b > 0) spans_empty[(b - 1) / g.T] = 1;
    } else if (b < g.complete * g.T) {
      const std::int64_t t = b / g.T, l = b - t * g.T, i = l / g.sigma, j = l - i * g.sigma;
      const int p = g.flag_pos + static_cast<int>(j);
      atomicOr(tile_desc + (t * g.words + p / 32) * g.omega + i, 1u << (p % 32));
    }
  }
}

// tile_ptr[t] = the row of entry min(t*T, nnz): the last r with row_ptr[r] <= that entry
// (Algorithm 24 line 3; `rows` for t = tiles), with bit 31 for the tiles marked above.
__global__ void tile_pointers(geometry g, const std::int32_t* row_ptr, const std::uint8_t* spans_empty,
                              std::uint32_t* tile_ptr) {
  for (std::int64_t t = first_index(); t <= g.tiles; t += grid_stride()) {
    const std::int64_t k = min(t * g.T, g.nnz);
    std::int64_t lo = 0, hi = g.rows + 1;  // first r with row_ptr[r] > k
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (row_ptr[mid] <= k) lo = mid + 1;
      else hi = mid;
    }
    const bool empty = t < g.tiles && spans_empty[t];
    tile_ptr[t] = static_cast<std::uint32_t>(lo - 1) | (empty ? csr5_empty_rows_bit : 0u);
  }
}

// Per complete tile: the tile's first entry is always flagged (it seals the first segment,
// sec. 6.3.4); y_offset = flags in the lanes to the left; seg_offset = for a lane with a flag,
// the flag-free lanes right after it (Algorithm 25). counts[t] = the tile's empty_offset
// length: its segment count if it spans empty rows, else 0.
__global__ void describe_tiles(geometry g, std::uint32_t* tile_desc, const std::uint8_t* spans_empty,
                               std::uint32_t* counts) {
  for (std::int64_t t = first_index(); t < g.complete; t += grid_stride()) {
    std::uint32_t* desc = tile_desc + t * g.words * g.omega;
    put_bits(desc, g.omega, g.flag_pos, 1, 1);
    std::uint64_t y_offset = 0;
    for (std::int64_t i = 0; i < g.omega; ++i) {
      put_bits(desc + i, g.omega, 0, g.y_bits, y_offset);
      y_offset += __popcll(get_bits(desc + i, g.omega, g.flag_pos, static_cast<int>(g.sigma)));
    }
    std::uint64_t run = 0;
    for (std::int64_t i = g.omega - 1; i >= 0; --i) {
      const bool flagged = get_bits(desc + i, g.omega, g.flag_pos, static_cast<int>(g.sigma)) != 0;
      if (flagged) put_bits(desc + i, g.omega, g.seg_pos, g.seg_bits, run);
      run = flagged ? 0 : run + 1;
    }
    counts[t] = spans_empty[t] ? static_cast<std::uint32_t>(y_offset) : 0u;
  }
}

// empty_offset (Algorithm 26) of the tiles with empty rows: segment s of tile t is the s-th
// flagged entry; its entry is the segment's row minus the tile's first row. Segment 0 is 0
// (written per tile: the tile may start inside a row); every other segment starts a row r
// inside the tile, whose index is its lane's y_offset plus the flags before it in the lane.
__global__ void empty_offsets(geometry g, const std::int32_t* row_ptr, const std::uint32_t* tile_ptr,
                              const std::uint32_t* tile_desc, const std::uint8_t* spans_empty,
                              const std::uint32_t* offset_ptr, std::uint32_t* offsets) {
  const std::int64_t n = max(g.rows, g.complete);
  for (std::int64_t idx = first_index(); idx < n; idx += grid_stride()) {
    if (idx < g.complete && spans_empty[idx]) offsets[offset_ptr[idx]] = 0;
    if (idx >= g.rows) continue;
    const std::int64_t b = row_ptr[idx];
    if (b == row_ptr[idx + 1] || b >= g.complete * g.T) continue;
    const std::int64_t t = b / g.T, l = b - t * g.T;
    if (!spans_empty[t] || l == 0) continue;
    const std::int64_t i = l / g.sigma, j = l - i * g.sigma;
    const std::uint32_t* lane = tile_desc + t * g.words * g.omega + i;
    const std::uint64_t before = get_bits(lane, g.omega, g.flag_pos, static_cast<int>(g.sigma)) &
                                 ((std::uint64_t{1} << j) - 1);
    const std::uint64_t s = get_bits(lane, g.omega, 0, g.y_bits) + __popcll(before);
    offsets[offset_ptr[t] + s] = static_cast<std::uint32_t>(idx - (tile_ptr[t] & csr5_row_mask));
  }
}

// Stored position p of a complete tile holds CSR entry t*T + i*sigma + j, where p = t*T +
// j*omega + i (sec. 6.3.1); the incomplete tile stays in CSR order. `to_tiles` gathers CSR ->
// CSR5, otherwise CSR5 -> CSR (p is then the CSR position).
template <class V>
__global__ void permute(geometry g, bool to_tiles, const std::int32_t* col_in, const V* val_in, std::int32_t* col_out,
                        V* val_out) {
  const std::int64_t tiled = g.complete * g.T;
  for (std::int64_t p = first_index(); p < g.nnz; p += grid_stride()) {
    std::int64_t src = p;
    if (p < tiled) {
      const std::int64_t t = p / g.T, q = p - t * g.T;
      src = to_tiles ? t * g.T + (q % g.omega) * g.sigma + q / g.omega : t * g.T + (q % g.sigma) * g.omega + q / g.sigma;
    }
    col_out[p] = col_in[src];
    val_out[p] = val_in[src];
  }
}

}  // namespace

template <class V>
csr5<V, std::int32_t, device> csr_to_csr5(const csr<V, std::int32_t, device>& a, const csr5_params& resolved,
                                          gpu_context& ctx) {
  const auto check_resolved = [](const char* name, std::int32_t v, std::int32_t max) {
    if (v < 1 || v > max)
      fail(errc::usage, std::string("gpu::csr_to_csr5: ") + name + " = " + std::to_string(v) + " is not in [1, " +
                            std::to_string(max) +
                            "]: pass resolved parameters (resolve requests on the host with cpu::resolve_csr5_params)");
  };
  check_resolved("omega", resolved.omega, csr5_max_omega);
  check_resolved("sigma", resolved.sigma, csr5_max_sigma);
  // The CPU's refusals, in its order and with its messages.
  constexpr std::int64_t max32 = std::numeric_limits<std::int32_t>::max();
  const std::int64_t rows = a.rows, nnz = a.nnz();
  if (rows > max32 || a.cols > max32)
    fail(errc::unsupported, "csr5: shape " + std::to_string(rows) + " x " + std::to_string(a.cols) +
                                " exceeds 2^31 - 1 rows or columns (tile_ptr holds 31-bit rows, col_idx is int32)");
  if (nnz > max32)
    fail(errc::unsupported,
         "csr5: " + std::to_string(nnz) + " entries exceed 2^31 - 1 (row_ptr and the tile fields are 32-bit)");
  const cudaStream_t s = stream_of(ctx);
  const auto last_pointer = [&] {
    std::int32_t v = -1;
    if (rows >= 0 && a.row_ptr.size() == static_cast<std::size_t>(rows) + 1)
      copy_to_host(&v, a.row_ptr.data() + rows, sizeof v);
    return v;
  };
  if (rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(rows) + 1 || a.col_idx.size() != a.values.size() ||
      last_pointer() != nnz)
    fail(errc::bad_input, "csr5: the input CSR's row_ptr/col_idx/values lengths do not match its shape and nnz");

  return in_context("gpu::csr_to_csr5", [&] {
    const geometry g = make_geometry(resolved, nnz, rows);
    csr5<V, std::int32_t, device> out;
    out.rows = rows;
    out.cols = a.cols;
    out.params = resolved;
    out.row_ptr.resize(rows + 1);
    out.tile_ptr.resize(g.tiles + 1);
    out.tile_desc.resize(g.complete * g.words * g.omega);
    out.tile_desc_offset_ptr.resize(g.complete + 1);
    out.col_idx.resize(nnz);
    out.values.resize(nnz);

    // One scratch block: per-tile empty-row marks and segment counts, then the scan's space.
    std::size_t scan_bytes = 0;
    check_cuda(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, static_cast<const std::uint32_t*>(nullptr),
                                             static_cast<std::uint32_t*>(nullptr), static_cast<int>(g.complete), s),
               "gpu::csr_to_csr5: sizing the scan");
    const std::size_t marks_bytes = round_up(g.tiles), counts_bytes = round_up(g.complete * sizeof(std::uint32_t));
    auto* scratch = static_cast<unsigned char*>(ctx.workspace(marks_bytes + counts_bytes + scan_bytes));
    auto* spans_empty = scratch;
    auto* counts = reinterpret_cast<std::uint32_t*>(scratch + marks_bytes);
    void* scan_space = scratch + marks_bytes + counts_bytes;

    check_cuda(cudaMemcpyAsync(out.row_ptr.data(), a.row_ptr.data(), (rows + 1) * sizeof(std::int32_t),
                               cudaMemcpyDeviceToDevice, s),
               "gpu::csr_to_csr5: copying row_ptr");
    if (g.tiles > 0)
      check_cuda(cudaMemsetAsync(spans_empty, 0, g.tiles, s), "gpu::csr_to_csr5: clearing the empty-row marks");
    if (g.complete > 0)
      check_cuda(cudaMemsetAsync(out.tile_desc.data(), 0, out.tile_desc.size() * sizeof(std::uint32_t), s),
                 "gpu::csr_to_csr5: clearing tile_desc");
    check_cuda(cudaMemsetAsync(out.tile_desc_offset_ptr.data(), 0, sizeof(std::uint32_t), s),
               "gpu::csr_to_csr5: tile_desc_offset_ptr[0]");
    if (rows > 0) {
      mark_rows<<<launch_blocks(rows, block_threads), block_threads, 0, s>>>(g, a.row_ptr.data(), out.tile_desc.data(),
                                                                             spans_empty);
      check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching the row marks");
    }
    tile_pointers<<<launch_blocks(g.tiles + 1, block_threads), block_threads, 0, s>>>(g, a.row_ptr.data(), spans_empty,
                                                                                      out.tile_ptr.data());
    check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching tile_ptr");
    std::uint32_t offsets = 0;
    if (g.complete > 0) {
      describe_tiles<<<launch_blocks(g.complete, block_threads), block_threads, 0, s>>>(g, out.tile_desc.data(),
                                                                                        spans_empty, counts);
      check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching tile_desc");
      check_cuda(cub::DeviceScan::InclusiveSum(scan_space, scan_bytes, counts, out.tile_desc_offset_ptr.data() + 1,
                                               static_cast<int>(g.complete), s),
                 "gpu::csr_to_csr5: scanning the empty_offset counts");
    }
    if (nnz > 0) {
      permute<<<launch_blocks(nnz, block_threads), block_threads, 0, s>>>(g, true, a.col_idx.data(), a.values.data(),
                                                                           out.col_idx.data(), out.values.data());
      check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching the transposition");
    }
    if (g.complete > 0) {
      check_cuda(cudaMemcpyAsync(&offsets, out.tile_desc_offset_ptr.data() + g.complete, sizeof offsets,
                                 cudaMemcpyDeviceToHost, s),
                 "gpu::csr_to_csr5: reading the empty_offset length");
      ctx.synchronize();
    }
    out.tile_desc_offset.resize(offsets);
    if (offsets > 0) {
      empty_offsets<<<launch_blocks(std::max(rows, g.complete), block_threads), block_threads, 0, s>>>(
          g, a.row_ptr.data(), out.tile_ptr.data(), out.tile_desc.data(), spans_empty,
          out.tile_desc_offset_ptr.data(), out.tile_desc_offset.data());
      check_cuda(cudaGetLastError(), "gpu::csr_to_csr5: launching empty_offset");
    }
    ctx.synchronize();
    return out;
  });
}

template <class V>
csr<V, std::int32_t, device> csr5_to_csr(const csr5<V, std::int32_t, device>& a, gpu_context& ctx) {
  const std::int64_t nnz = a.nnz(), rows = a.rows;
  if (rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(rows) + 1 || a.col_idx.size() != a.values.size() ||
      a.params.omega < 1 || a.params.omega > csr5_max_omega || a.params.sigma < 1 ||
      a.params.sigma > csr5_max_sigma)
    fail(errc::bad_input, "csr5: row_ptr/col_idx/values lengths or params do not match (validate() the matrix first)");
  return in_context("gpu::csr5_to_csr", [&] {
    const geometry g = make_geometry(a.params, nnz, rows);
    const cudaStream_t s = stream_of(ctx);
    csr<V, std::int32_t, device> out;
    out.rows = rows;
    out.cols = a.cols;
    out.row_ptr.resize(rows + 1);
    out.col_idx.resize(nnz);
    out.values.resize(nnz);
    check_cuda(cudaMemcpyAsync(out.row_ptr.data(), a.row_ptr.data(), (rows + 1) * sizeof(std::int32_t),
                               cudaMemcpyDeviceToDevice, s),
               "gpu::csr5_to_csr: copying row_ptr");
    if (nnz > 0) {
      permute<<<launch_blocks(nnz, block_threads), block_threads, 0, s>>>(g, false, a.col_idx.data(), a.values.data(),
                                                                           out.col_idx.data(), out.values.data());
      check_cuda(cudaGetLastError(), "gpu::csr5_to_csr: launching the transposition");
    }
    ctx.synchronize();
    return out;
  });
}

#define SPCONV_INST(V)                                                                                         \
  template csr5<V, std::int32_t, device> csr_to_csr5<V>(const csr<V, std::int32_t, device>&, const csr5_params&, \
                                                        gpu_context&);                                         \
  template csr<V, std::int32_t, device> csr5_to_csr<V>(const csr5<V, std::int32_t, device>&, gpu_context&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
