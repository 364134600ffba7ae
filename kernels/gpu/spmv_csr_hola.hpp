// HOLA-SpMV (globally homogeneous, locally adaptive; hola-spmv-steinberger.txt sec. 3) on plain
// CSR: no preprocessing, no stored extra arrays, two kernels per product (the second launched
// as the first's programmatic dependent, so that they overlap). y = alpha*A*x + beta*y with A,
// x and y in device memory, queued on ctx's stream (complete after ctx.synchronize()); beta ==
// 0 writes y without reading it. Uses ctx.workspace() for the
// first and last row of each block (two indices per 2048 entries). Results may differ in the
// last bits from run to run (atomic additions order partial sums), within the bound of
// specs/gpu.md.
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Entries per thread and threads per block of the core kernel: every block takes exactly
// hola_entries_per_block consecutive entries (sec. 3.1, strict non-zero splitting; the paper
// uses "between two and four thousand"). Other block sizes, each with the blocks an SM its
// registers allow (H200, double, stop 37 device call 7, beside 256 threads in one call):
// 128 threads (12 an SM) 1.154x -> 1.166x cuSPARSE on the replicated set (hangGlider_2 and
// rajat01 +8-9%) but bcspwr10 1.231x -> 1.108x and the 27-point stencil 1.097x -> 1.067x;
// 512 threads (3 an SM) 1.089x, stencil 1.069x.
inline constexpr int hola_entries_per_thread = 8;
inline constexpr int hola_block_threads = 256;
inline constexpr int hola_entries_per_block = hola_entries_per_thread * hola_block_threads;
// A block whose rows average fewer entries than this sums a row per thread instead of by bit
// masks (spmv_csr_hola.cu, "Short rows"); it also bounds the rows of the other path's shared
// buffer (npb / 13). On the H100 (double, replicated set) 10 gave 1.07x cuSPARSE in geometric
// mean, 6 1.06x, 16 1.08x (within noise); after stop 15's first-kernel change 10 gave 1.090x,
// 13 1.099x (twice), 16 1.093x.
inline constexpr int hola_short_row_entries = 13;

// How the first kernel finds each block's first and last row (sec. 3.1):
// - scatter: the paper's Algorithm 2, a thread per row: reads all of row_ptr (4 or 8 bytes a
//   row): a few microseconds on a small matrix, but where rows hold one or two entries a
//   second pass over much of what the product reads;
// - search: a thread per block searches row_ptr for its first and last entry, starting from
//   the row where the entry would lie were rows equally long and widening the bracket from
//   there: a few dependent loads, whatever the number of rows;
// - automatic: hola_searches_rows.
enum class hola_row_assignment { automatic, scatter, search };

// The automatic choice: search from hola_search_min_rows rows on, where reading row_ptr (8 MB
// of 32-bit indices) takes as long as the search's chain of dependent loads. Measured on the
// H100 (double): searching cost the matrices as they are (402-114599 rows) 3-7 us each, 1.3x
// to 1.9x their time; on the replicated set it was 1-4% faster from 3M rows on, even at 2.4M
// and 2.9M rows, and it took memplus_rhs1 (100M rows of one entry) from 1.30 ms to 0.92 ms.
inline constexpr std::int64_t hola_search_min_rows = std::int64_t{1} << 21;
inline bool hola_searches_rows(std::int64_t rows) { return rows >= hola_search_min_rows; }

// How the core kernel loads a block's columns and values:
// - chunk: a lane loads 16 bytes of values at a time (2 doubles or 4 floats) with their columns,
//   half the load instructions of `entry` (a quarter for float) and 16-byte stores of the
//   products. A block holding fewer entries than the others (the matrix's last) and arrays not
//   aligned to 16 bytes are loaded by entry;
// - entry: a lane loads entries tid, tid + 256, ...: each load instruction of a warp reads 32
//   consecutive entries, and so does each of its gathers of x, where `chunk` gathers x for
//   every other entry of 64. The one matrix where that lost much is n1024-l1 (rows of 16
//   pairs of adjacent columns), though Nsight Compute counts the same L1 requests either way.
// H200, double, replicated set, stop 39 device calls 2 and 3, two runs each beside stop 38's
// kernel (entries, products padded a slot a run): 1.161x -> 1.202x cuSPARSE in geometric mean
// (76.6% -> 79.3% of the copy bandwidth), +3% to +13% on 18 of the 20 matrices (ca-AstroPh
// 0.914x -> 1.036x, lap3D_7pt_n20 1.338x -> 1.422x), rajat01 -2%, n1024-l1 -26% (1.098x ->
// 0.811x; specs/gpu.md has its profile); BCSR's 1 x 1 blocks 1.169x -> 1.210x; the 27-point
// stencil 1.102x -> 1.177x. `entry` with this file's layout ran 1-4% below stop 38's kernel on
// the matrices of 30 or more entries a row (call 2), n1024-l1 +1%.
enum class hola_loads { chunk, entry };

template <class V, class I>
void spmv_hola(const csr<V, I, device>& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx,
               hola_row_assignment assign = hola_row_assignment::automatic, hola_loads loads = hola_loads::chunk);

// The same on CSR's arrays held by another format (BCSR with 1 x 1 blocks): ptr has rows + 1
// offsets, col and val nnz entries, all in device memory.
template <class V, class I>
void spmv_hola_arrays(std::int64_t rows, std::int64_t nnz, const I* ptr, const I* col, const V* val, V alpha,
                      const V* x, V beta, V* y, gpu_context& ctx,
                      hola_row_assignment assign = hola_row_assignment::automatic,
                      hola_loads loads = hola_loads::chunk);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
