// HDF5's shuffle filter undone on the GPU (io/hdf5/device_load.cpp): a chunk copied to the
// device still shuffled is unshuffled there, at device memory speed, instead of by a pass
// over host memory before the copy. CUDA builds only; no CUDA types here.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstddef>
#include <cstdint>

#include "formats/device.hpp"

namespace spconv {

// For a chunk of `chunk_elements` elements of `element_size` bytes as the shuffle filter stores
// it (byte j of element i at j * chunk_elements + i, io/hdf5/chunks.hpp), writes elements
// [0, elements) (elements <= chunk_elements: the last chunk of a dataset is partial) to `out`
// as plain elements. Both pointers are device memory; the work is queued on ctx's stream.
void unshuffle_on_device(const unsigned char* shuffled, std::uint64_t chunk_elements, std::uint64_t elements,
                         std::size_t element_size, unsigned char* out, gpu_context& ctx);

}  // namespace spconv
#endif  // SPCONV_HAVE_CUDA
