// HOLA-SpMV (globally homogeneous, locally adaptive; hola-spmv-steinberger.txt sec. 3) on plain
// CSR: no preprocessing, no stored extra arrays, two kernels per product. y = alpha*A*x +
// beta*y with A, x and y in device memory, queued on ctx's stream (complete after
// ctx.synchronize()); beta == 0 writes y without reading it. Uses ctx.workspace() for the
// first and last row of each block (two indices per 2048 entries). Results may differ in the last bits from
// run to run (shared-memory atomics order partial sums), within the bound of specs/gpu.md.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Entries per thread and threads per block of the core kernel: every block takes exactly
// hola_entries_per_block consecutive entries (sec. 3.1, strict non-zero splitting; the paper
// uses "between two and four thousand").
inline constexpr int hola_entries_per_thread = 8;
inline constexpr int hola_block_threads = 256;
inline constexpr int hola_entries_per_block = hola_entries_per_thread * hola_block_threads;
// A block whose rows average fewer entries than this sums a row per thread instead of by bit
// masks (spmv_csr_hola.cu, "Short rows"); it also bounds the rows of the other path's shared
// buffer (npb / 10). The same mean row length as csr_scalar_below: on the H100 (double,
// replicated set) 10 gave 1.07x cuSPARSE in geometric mean, 6 1.06x, 16 1.08x (within noise).
inline constexpr int hola_short_row_entries = 10;

template <class V, class I>
void spmv_hola(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
