// CSR <-> CMRS on the CPU (shared/papers/cmrs-koza.txt sec. 3, 4, 6.7; specs/formats/cmrs.md).
#pragma once
#include <cstdint>

#include "formats/cmrs.hpp"
#include "formats/csr.hpp"

namespace spconv::cpu {

// The automatic choices, for the fields a request leaves at 0:
//   modulo: 32, the basic layout (the sec. 6.7 reordering is opt-in: it pads);
//   height: with modulo < 32, 16 (sec. 6.7 and appendix 10 run HEIGHT = 16 with M = 8);
//           otherwise 6 for float and 4 for double, the optimal strip heights sec. 6.3
//           reports for the paper's newest GPU (K20M, Kepler); the optimum is set by how
//           much shared memory (height values per thread) the occupancy allows.
// Throws errc::usage for height outside 1..16, modulo not in {2, 4, 8, 16, 32},
// height * modulo < 32 with modulo < 32, or sort_columns with modulo < 32.
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
