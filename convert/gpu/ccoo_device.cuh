// What the CCOO GPU code shares (the converters in convert/gpu/ and the SpMV in
// kernels/gpu/spmv_ccoo.cu): a chunk's blob layout and the blob field readers, for device
// code. Included by .cu files only.
#pragma once
#include <cstdint>

#include "formats/ccoo.hpp"

namespace spconv::gpu::ccoo_device {

// Section starts of one chunk's blob, in 32 bits: a chunk holds at most 256 * 1024 entries,
// so its blob stays far below 4 GiB.
struct section {
  std::uint32_t rows, pads, cols, values, size;
  std::uint32_t col_bytes, value_bytes;
};

// a is a power of two (an element size or 8): a mask, not a division. The SpMV computes a
// chunk's layout per chunk from its code, and a division by a run-time divisor is a ~20
// instruction sequence on the GPU.
__host__ __device__ constexpr std::uint32_t align_up(std::uint32_t n, std::uint32_t a) { return (n + a - 1) & ~(a - 1); }

// ccoo_chunk_layout (formats/ccoo.hpp) for device code, which cannot call that host
// function: the same sections in the same order with the same alignment. Every kernel of the
// GPU path computes its chunk's layout here; the tests hold the GPU converters' blobs equal
// to the CPU's byte for byte, which keeps the two definitions together.
__host__ __device__ inline section chunk_section(std::int64_t entries, std::int32_t k, std::uint8_t code,
                                                 std::uint32_t value_size) {
  const auto e = static_cast<std::uint32_t>(entries);
  section l{};
  l.col_bytes = 1u << ((code & ccoo_code::width_mask) >> 1);
  l.value_bytes = (code & ccoo_code::lut) ? 1u : value_size;
  std::uint32_t o = 0;
  l.rows = o;
  if (!(code & ccoo_code::single_row)) o += e / static_cast<std::uint32_t>(k);
  l.pads = o;
  if (code & ccoo_code::pads) o += (e + 7) / 8;
  o = align_up(o, l.col_bytes);
  l.cols = o;
  o += e * l.col_bytes;
  o = align_up(o, l.value_bytes);
  l.values = o;
  o += e * l.value_bytes;
  l.size = align_up(o, 8);
  return l;
}

// Entries of chunk c: B*K, the last chunk the rest.
__host__ __device__ inline std::int64_t chunk_entries(std::int64_t entries, std::int64_t per_chunk, std::int64_t c) {
  const std::int64_t rest = entries - c * per_chunk;
  return rest < per_chunk ? rest : per_chunk;
}

// Sections are aligned to their element size and blobs to 8 bytes (the allocation to 256),
// so the typed loads are aligned.
__device__ __forceinline__ std::uint32_t col_offset(const std::uint8_t* cols, std::uint32_t col_bytes, std::int64_t e) {
  switch (col_bytes) {
    case 1: return cols[e];
    case 2: return reinterpret_cast<const std::uint16_t*>(cols)[e];
    default: return reinterpret_cast<const std::uint32_t*>(cols)[e];
  }
}

__device__ __forceinline__ bool is_pad(const std::uint8_t* bitmap, std::int64_t e) {
  return bitmap != nullptr && ((bitmap[e >> 3] >> (e & 7)) & 1) != 0;
}

}  // namespace spconv::gpu::ccoo_device
