// Device helper shared by the GPU MBR converter (convert/gpu/mbr_to_csr.cu) and the GPU MBR
// SpMV (kernels/gpu/spmv_mbr.cu): one matrix row's part of a block bitmap, for a thread per
// matrix row walking its block row or a lane per row of a block; row i of an r x c block owns
// bits i*c .. i*c + c - 1
// (sec. III: bit i*c + j is row i, column j, lowest bit top left), and its values follow the
// values of the block's lower bits, since a block stores its values in increasing bit order.
#pragma once
#include <cstdint>

namespace spconv::gpu {

// W: the word the bitmap is read into, 64 bits, or 32 when the bitmap has at most 32 bits (the
// MBR tile kernel, where 64-bit shifts and masks would double the instructions of a slice).
template <class W>
struct mbr_row_bits_of {
  W cols;      // bit j set: the row holds an entry in column j of the block
  int before;  // the block's values that come before this row's (set bits below i*c)
};
using mbr_row_bits = mbr_row_bits_of<std::uint64_t>;

__device__ __forceinline__ int mbr_popcount(std::uint64_t v) { return __popcll(v); }
__device__ __forceinline__ int mbr_popcount(std::uint32_t v) { return __popc(v); }

// i*c < the bits of W always (i < r and r*c <= the bitmap's bits), so both shifts are defined.
template <class W>
__device__ __forceinline__ mbr_row_bits_of<W> mbr_row_of(W map, int i, int c) {
  constexpr int bits = 8 * static_cast<int>(sizeof(W));
  const int shift = i * c;
  const W below = shift == 0 ? 0 : ~W{0} >> (bits - shift);
  const W row_mask = c >= bits ? ~W{0} : (W{1} << c) - 1;
  return {(map >> shift) & row_mask, mbr_popcount(map & below)};
}

// Calls f with a value of the bitmap's word type for bitmap_bytes w (checked before): one
// dispatch per call, so the kernels load each bitmap as one word of its own width (sec. III's
// maptype; device allocations are aligned, and bitmap b starts at byte b * w).
template <class F>
void with_bitmap_type(int w, F&& f) {
  switch (w) {
    case 1: f(std::uint8_t{}); break;
    case 2: f(std::uint16_t{}); break;
    case 4: f(std::uint32_t{}); break;
    default: f(std::uint64_t{}); break;
  }
}

}  // namespace spconv::gpu
