// CSR <-> CMRS on the GPU (shared/papers/cmrs-koza.txt sec. 3, 4, 6.7; specs/formats/cmrs.md,
// section "GPU"), byte-identical to the CPU converters of convert/cpu/cmrs.hpp. Both return
// when the result is complete (they wait for ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/cmrs.hpp"
#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Canonical CSR -> CMRS with the parameters `resolved`, which must be what
// cpu::resolve_cmrs_params returned (every field concrete; the CMRS rule reads no row
// statistics, so any host copy of the matrix, or none, gives the same answer). A field left
// automatic (0) or out of range is errc::usage; 2^28 columns or more, or a sec. 6.7 layout
// padded beyond 2^31 - 1 slots, is errc::unsupported with the CPU's message. The result
// equals cpu::csr_to_cmrs(a, resolved) bit for bit.
template <class V>
cmrs<V, std::int32_t, device> csr_to_cmrs(const csr<V, std::int32_t, device>& a, const cmrs_params& resolved,
                                          gpu_context& ctx);

// CMRS (as validate() accepts it) -> canonical CSR, equal to cpu::cmrs_to_csr bit for bit.
template <class V>
csr<V, std::int32_t, device> cmrs_to_csr(const cmrs<V, std::int32_t, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
