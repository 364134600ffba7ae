// CSR <-> CMRS on the CPU (shared/papers/cmrs-koza.txt sec. 3, 4, 6.7; specs/formats/cmrs.md).
#pragma once
#include <cstdint>

#include "formats/cmrs.hpp"
#include "formats/csr.hpp"

namespace spconv::cpu {

// The automatic choices, for the fields a request leaves at 0:
//   modulo: 32, the basic layout (the sec. 6.7 reordering is opt-in: it pads);
//   height: with modulo < 32, 16 (sec. 6.7 and appendix 10 run HEIGHT = 16 with M = 8);
//           otherwise cmrs_automatic_height below.
// Throws errc::usage for height outside 1..16, modulo not in {2, 4, 8, 16, 32},
// height * modulo < 32 with modulo < 32, or sort_columns with modulo < 32.
template <class V>
cmrs_params resolve_cmrs_params(const csr<V, std::int32_t>& a, cmrs_params requested);

// Entries a strip should hold at least: one per lane of the warp that reads it. Sec. 5's
// eq. 5.1, f(h, mu) = 1 + (lambda - b) / (h mu b), is the bytes moved per byte used; with
// the segment of sec. 6.7 (lambda = 256 bytes, b = 8 for double) f falls to ~2 at h mu = 32
// and eq. 5.2 gives a speed-up of nearly h over one row per warp while mu <= 5.
inline constexpr std::int64_t cmrs_strip_entries = 32;

// The automatic height of the basic layout: the smallest height whose strips hold
// cmrs_strip_entries entries at the mean row length (ceil(32 rows / nnz)), at least the
// height sec. 6.3 found optimal on the K20M (6 for float, 4 for double: there the shared
// buffer of height values per thread capped the occupancy), at most 16 (sec. 5: beyond it
// eq. 5.2 gains little; 4 row bits). An H100 multiprocessor has 228 KB of shared memory, so
// the height-16 buffer (32 KB per 256 threads in double) still leaves 7 blocks per SM.
int cmrs_automatic_height(std::int64_t rows, std::int64_t nnz, int value_bytes);

template <class V>
cmrs_params resolve_cmrs_params(const csr<V, std::int32_t>& a, cmrs_params requested);

// CSR (canonical) -> CMRS with resolve_cmrs_params(a, requested). Throws
// errc::unsupported for more than 2^28 columns (28-bit column field, sec. 4) or when the
// padded slot count of the sec. 6.7 layout exceeds the 32-bit strip offsets.
template <class V>
cmrs<V> csr_to_cmrs(const csr<V, std::int32_t>& a, const cmrs_params& requested);

// CMRS (as validate() accepts it) -> canonical CSR; the exact inverse of csr_to_cmrs.
template <class V>
csr<V, std::int32_t> cmrs_to_csr(const cmrs<V>& a);

}  // namespace spconv::cpu
