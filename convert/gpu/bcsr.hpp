// CSR <-> BCSR on the GPU, byte-identical to the CPU converters (convert/cpu/bcsr.hpp;
// specs/formats/bcsr.md, "GPU"). Both return when the result is complete (they wait for
// ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/bcsr.hpp"
#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Canonical CSR -> BCSR with a resolved block size: both sides in [1, 16], as
// cpu::resolve_bcsr_params returns them (errc::usage otherwise, including for a 0 "automatic"
// side). The automatic rule counts the blocks of every candidate size exactly over the whole
// matrix; the caller runs it on the host copy of the CSR that it uploads, so that the GPU
// and the CPU choose the same size. Refuses (errc::unsupported, the CPU's message) a size
// whose values would exceed bcsr_max_values. `a` must be canonical CSR (not re-validated).
// The result equals cpu::csr_to_bcsr(host a, resolved) bit for bit.
template <class V>
bcsr<V, std::int32_t, device> csr_to_bcsr(const csr<V, std::int32_t, device>& a, const bcsr_params& resolved,
                                          gpu_context& ctx);

// Valid BCSR -> the canonical CSR it was made from, equal to cpu::bcsr_to_csr bit for bit:
// every value that is not +0.0 fill, plus the positions listed in stored_zeros.
template <class V>
csr<V, std::int32_t, device> bcsr_to_csr(const bcsr<V, std::int32_t, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
