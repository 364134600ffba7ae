// CSR <-> CMRS on the CPU (shared/papers/cmrs-koza.txt sec. 3, 4, 6.7; specs/formats/cmrs.md).
#pragma once
#include <cstdint>

#include "formats/cmrs.hpp"
#include "formats/csr.hpp"

namespace spconv::cpu {

// The automatic choices, for the fields a request leaves at 0:
//   modulo: 32, the basic layout (the sec. 6.7 reordering is opt-in: it pads);
//   height: with modulo < 32, 16 (sec. 6.7 and appendix 10 run HEIGHT = 16 with M = 8);
//           otherwise cmrs_automatic_height below (by the mean row length).
// Throws errc::usage for height outside 1..16, modulo not in {2, 4, 8, 16, 32},
// height * modulo < 32 with modulo < 32, or sort_columns with modulo < 32.
template <class V>
cmrs_params resolve_cmrs_params(const csr<V, std::int32_t>& a, cmrs_params requested);

// The automatic height of the basic layout, by the mean row length mu = nnz / rows (sec. 5:
// eq. 5.1 gives the bytes moved per byte used as f(h, mu) = 1 + (lambda - b) / (h mu b), so
// short rows need tall strips; the occupancy that the buffer of h values per lane leaves
// caps h, sec. 6.3):
//   mu < cmrs_short_row_mean (4):  16, the most the 4 row bits hold: strips of < 64 entries;
//   mu < cmrs_long_row_mean (32):  cmrs_mid_height (8): in double 2 KB of buffer per warp, so
//                                  a 256-thread block takes 16 KB and an H100 SM still holds
//                                  its full 2048 threads (16 rows: 32 KB, 7 blocks, 87.5%);
//   otherwise: sec. 6.3's K20M optimum, 6 for float and 4 for double (rows long enough to
//              fill a strip; a taller buffer only costs occupancy).
// Measured on the H100 (double, specs/formats/cmrs.md): heights 4, 8 and 16 on the 20
// replicated matrices; the thresholds follow where each height was the fastest.
inline constexpr std::int64_t cmrs_short_row_mean = 4;
inline constexpr std::int64_t cmrs_long_row_mean = 32;
inline constexpr int cmrs_mid_height = 8;
int cmrs_automatic_height(std::int64_t rows, std::int64_t nnz, int value_bytes);

// CSR (canonical) -> CMRS with resolve_cmrs_params(a, requested). Throws
// errc::unsupported for more than 2^28 columns (28-bit column field, sec. 4) or when the
// padded slot count of the sec. 6.7 layout exceeds the 32-bit strip offsets.
template <class V>
cmrs<V> csr_to_cmrs(const csr<V, std::int32_t>& a, const cmrs_params& requested);

// CMRS (as validate() accepts it) -> canonical CSR; the exact inverse of csr_to_cmrs.
template <class V>
csr<V, std::int32_t> cmrs_to_csr(const cmrs<V>& a);

}  // namespace spconv::cpu
