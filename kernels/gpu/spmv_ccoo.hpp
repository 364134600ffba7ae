// CCOO SpMV on the GPU, y = alpha*A*x + beta*y, with A, x and y in device memory
// (kernels/gpu/spmv_ccoo.cu; specs/formats/ccoo.md, "GPU"). Queued on ctx's stream without
// waiting: y is complete after ctx.synchronize() or a synchronous copy. As in BLAS, beta == 0
// means y is only written, never read (it may hold NaN). x has a.cols elements, y a.rows; the
// matrix must be valid (validate() on its host copy).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/ccoo.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Which kernels run (gpu::spmv's last argument; the tests run each on every matrix):
// - blocks: the kernel of Aliaga et al., Euro-Par 2020 Workshops, Sect. 2, for every chunk: y is
//   first scaled by beta (set to 0 when beta == 0); then one thread block per chunk, one thread
//   per group, decodes its K entries by the chunk's format code and sums their products
//   (Listing 1.1, padding skipped by the pad bitmap, as on the CPU); a warp-level segmented scan
//   over the row offsets (Listing 1.2, Fig. 1) leaves each row segment's sum in its first lane,
//   which adds it to y with atomicAdd. A single-row chunk uses a plain block reduction and one
//   atomicAdd.
// - table_warps: the chunks whose values are table indices go to a second kernel, a warp per
//   chunk, a lane per K consecutive groups at a time (chunks of 256 x 1, 2 or 4 only), and the
//   other chunks, if the matrix can have any, to the block kernel.
// - automatic: table warps alone where every chunk is a table chunk (ccoo_every_chunk_in_table),
//   the shape fits (ccoo_table_warps_fit) and a warp a chunk pays (ccoo_table_warps_pay); else
//   blocks (on matrices mixing table and direct chunks the two launches measured slower).
// float adds use a compare-and-swap loop instead of atomicAdd: the hardware's f32 atomic add
// flushes subnormals to zero. The atomics make the summation order, hence the last bits of y,
// vary from run to run.
enum class ccoo_kernel { automatic, blocks, table_warps };

// The table-warp kernel's shapes: B = 256 (a warp's 32 lanes take 256 / (32 K) steps of K
// groups) and K in {1, 2, 4} (compiled; the automatic rule picks only these).
constexpr int ccoo_table_warps_b = 256;
constexpr bool ccoo_table_warps_fit(int b, int k) { return b == ccoo_table_warps_b && (k == 1 || k == 2 || k == 4); }

// A valid matrix (validate) stores values directly only in a chunk that holds a value the table
// misses, and its table is the canonical one, the min(256, distinct) most frequent values: a
// table of fewer than 256 values holds every value, so every chunk is a table chunk.
constexpr bool ccoo_every_chunk_in_table(std::int64_t table_size) {
  return table_size > 0 && table_size < static_cast<std::int64_t>(ccoo_table_capacity);
}

// A warp per table chunk pays where (1) the chunks fill every warp the device holds for that
// kernel at least once: below, a chunk's 8 warps in the block kernel keep more of the device
// busy (stop 29, H100: a warp per chunk on the 20 real matrices as they are, 7 to 596 chunks,
// ran 1.08x cuSPARSE in geometric mean against the block kernel's 1.51x); and (2) rows average
// at least 1.75 groups (groups = chunks * B, padding included, over rows), so that a lane's K
// consecutive groups share rows and its sums in registers replace scan steps: where each group
// is a row of its own, the block kernel's more loads in flight win (replicated to 100M entries,
// specs/formats/ccoo.md: luxembourg, 1.1 groups a row, and arrow, 1.5, ran 20-30% slower;
// lap3D_7pt_n20, 2.0, bcspwr10, 2.4, and rajat01, 3.6, 6-70% faster).
constexpr bool ccoo_table_warps_pay(std::int64_t chunks, int chunk_b, std::int64_t rows, std::int64_t resident_warps) {
  return chunks >= resident_warps && 4 * chunks * chunk_b >= 7 * rows;
}

template <class V>
void spmv(const ccoo<V, std::int32_t, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
          ccoo_kernel kernel = ccoo_kernel::automatic);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
