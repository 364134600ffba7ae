// Synthetic matrices generated in device memory: the benchmark's large 3D stencil is made
// where it is used, without a host copy the size of the matrix or a transfer. The arrays
// equal the host generator's (io/generate.hpp) bit for bit. CUDA builds only.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gen::gpu {

// gen::stencil(3, 27, n, seed) built on the device: the 27-point stencil on an n x n x n grid,
// n^3 rows. Same errors as the host generator (errc::usage for n < 1, errc::unsupported
// beyond 32-bit indices), errc::device when device memory is short. Returns when complete.
template <class V>
csr<V, std::int32_t, device> stencil27(std::int64_t n, std::uint64_t seed, gpu_context& ctx);

}  // namespace spconv::gen::gpu
#endif  // SPCONV_HAVE_CUDA
