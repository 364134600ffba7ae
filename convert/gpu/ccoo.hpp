// CSR <-> CCOO on the GPU, byte-identical to the CPU converters (convert/cpu/ccoo.hpp;
// specs/formats/ccoo.md, "GPU"). Both return when the result is complete (they wait for
// ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/ccoo.hpp"
#include "formats/csr.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Canonical CSR -> CCOO with resolved parameters: chunk_b in [1, 256] and chunk_k in
// [1, 1024], as cpu::resolve_ccoo_params returns them (errc::usage otherwise, including for a
// 0 "automatic" field). The automatic chunk_k depends only on the row lengths; the caller
// runs cpu::resolve_ccoo_params on the host copy of the CSR that it uploads. Refuses
// (errc::unsupported, the CPU's message) more than 2^31 - 1 entries after padding. `a` must
// be canonical CSR (not re-validated). The result equals cpu::csr_to_ccoo(host a, resolved)
// bit for bit, value table included.
template <class V>
ccoo<V, std::int32_t, device> csr_to_ccoo(const csr<V, std::int32_t, device>& a, const ccoo_params& resolved,
                                          gpu_context& ctx);

// Valid CCOO -> canonical CSR, equal to cpu::ccoo_to_csr bit for bit: every entry that the
// chunk's pad bitmap does not mark.
template <class V>
csr<V, std::int32_t, device> ccoo_to_csr(const ccoo<V, std::int32_t, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
