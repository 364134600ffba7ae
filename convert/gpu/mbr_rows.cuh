// Device helper shared by the GPU MBR converter (convert/gpu/mbr_to_csr.cu) and the GPU MBR
// SpMV (kernels/gpu/spmv_mbr.cu): one matrix row's part of a block bitmap. Both walk a block
// row with one thread per matrix row; row i of an r x c block owns bits i*c .. i*c + c - 1
// (sec. III: bit i*c + j is row i, column j, lowest bit top left), and its values follow the
// values of the block's lower bits, since a block stores its values in increasing bit order.
#pragma once
#include <cstdint>

namespace spconv::gpu {

struct mbr_row_bits {
  std::uint64_t cols;  // bit j set: the row holds an entry in column j of the block
  int before;          // the block's values that come before this row's (set bits below i*c)
};

// i*c < 64 always (i < r and r*c <= 64), so both shifts are defined.
__device__ __forceinline__ mbr_row_bits mbr_row_of(std::uint64_t map, int i, int c) {
  const int shift = i * c;
  const std::uint64_t below = shift == 0 ? 0 : ~std::uint64_t{0} >> (64 - shift);
  const std::uint64_t row_mask = c >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << c) - 1;
  return {(map >> shift) & row_mask, __popcll(map & below)};
}

}  // namespace spconv::gpu
