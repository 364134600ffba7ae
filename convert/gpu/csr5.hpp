// CSR <-> CSR5 on the GPU (specs/formats/csr5.md, section "GPU"; liu-thesis-csr5.txt sec.
// 6.3 layout, sec. 8.5.2 conversion). Byte-identical to cpu::csr_to_csr5 / cpu::csr5_to_csr.
// Both return when the result is complete (they wait for ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/csr5.hpp"
#include "formats/device.hpp"

namespace spconv::gpu {

// Canonical CSR (validate() holds; not re-checked) -> CSR5 with the given tile size, equal
// bit for bit to cpu::csr_to_csr5(host copy, resolved). `resolved` must be concrete (omega
// and sigma in [1, 64], errc::usage otherwise): resolve a request on the host with
// cpu::resolve_csr5_params, whose rule reads only rows and nnz (the GPU target) and which
// callers apply to the host CSR they uploaded. Refuses what the CPU refuses, with its
// messages (errc::unsupported beyond the 32-bit fields, errc::bad_input for inconsistent
// lengths). Out of device memory: errc::device naming the conversion and the allocation.
template <class V>
csr5<V, std::int32_t, device> csr_to_csr5(const csr<V, std::int32_t, device>& a, const csr5_params& resolved,
                                          gpu_context& ctx);

// CSR5 (valid: validate() holds on its host copy) -> the CSR it was made from, equal to
// cpu::csr5_to_csr: row_ptr copied, col_idx/values transposed back in the complete tiles.
template <class V>
csr<V, std::int32_t, device> csr5_to_csr(const csr5<V, std::int32_t, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
