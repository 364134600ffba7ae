#include "io/hdf5/device_unshuffle.hpp"

#include <cuda_runtime.h>

#include <string>

#include "formats/device_kernel.cuh"

namespace spconv {
namespace {

using gpu::first_index;
using gpu::grid_stride;
using gpu::stream_of;

constexpr int block_threads = 256;

// One thread per element: its S bytes from the S planes (consecutive threads read consecutive
// bytes of each plane), stored as one S-byte word (the output is S-aligned: device arrays are,
// and a chunk starts at a whole element).
template <class Word>
__global__ void unshuffle_words(const unsigned char* __restrict__ in, std::uint64_t stride, std::uint64_t elements,
                                Word* __restrict__ out) {
  constexpr int S = sizeof(Word);
  for (std::int64_t i = first_index(); i < static_cast<std::int64_t>(elements); i += grid_stride()) {
    Word w = 0;
#pragma unroll
    for (int j = 0; j < S; ++j) w |= static_cast<Word>(in[j * stride + i]) << (8 * j);  // little-endian host
    out[i] = w;
  }
}

__global__ void unshuffle_bytes(const unsigned char* __restrict__ in, std::uint64_t stride, std::uint64_t elements,
                                int size, unsigned char* __restrict__ out) {
  for (std::int64_t i = first_index(); i < static_cast<std::int64_t>(elements); i += grid_stride())
    for (int j = 0; j < size; ++j) out[i * size + j] = in[j * stride + i];
}

}  // namespace

void unshuffle_on_device(const unsigned char* shuffled, std::uint64_t chunk_elements, std::uint64_t elements,
                         std::size_t element_size, unsigned char* out, gpu_context& ctx) {
  if (elements == 0) return;
  const cudaStream_t s = stream_of(ctx);
  const unsigned blocks = launch_blocks(static_cast<std::int64_t>(elements), block_threads);
  switch (element_size) {
    case 2:
      unshuffle_words<<<blocks, block_threads, 0, s>>>(shuffled, chunk_elements, elements, reinterpret_cast<std::uint16_t*>(out));
      break;
    case 4:
      unshuffle_words<<<blocks, block_threads, 0, s>>>(shuffled, chunk_elements, elements, reinterpret_cast<std::uint32_t*>(out));
      break;
    case 8:
      unshuffle_words<<<blocks, block_threads, 0, s>>>(shuffled, chunk_elements, elements, reinterpret_cast<std::uint64_t*>(out));
      break;
    default:
      unshuffle_bytes<<<blocks, block_threads, 0, s>>>(shuffled, chunk_elements, elements, static_cast<int>(element_size), out);
  }
  check_cuda(cudaGetLastError(), "unshuffling a chunk of " + std::to_string(elements) + " elements on the device");
}

}  // namespace spconv
