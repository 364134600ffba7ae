// CSR <-> HYB on the GPU (specs/formats/hyb.md, section "GPU"; liu-thesis-csr5.txt sec. 5.3.1),
// byte-identical to cpu::csr_to_hyb / cpu::hyb_to_csr. Both return when the result is
// complete (they wait for ctx's stream).
#pragma once
#ifdef SPCONV_HAVE_CUDA
#include <cstdint>

#include "formats/csr.hpp"
#include "formats/device.hpp"
#include "formats/hyb.hpp"

namespace spconv::gpu {

// Canonical CSR (validate() holds; not re-checked) -> HYB with the given ELL width, equal bit
// for bit to cpu::csr_to_hyb(host copy, resolved). `resolved.ell_width` is the width itself:
// 0 means an empty ELL part (everything in the COO tail), not "automatic". Resolve a request
// on the host with cpu::resolve_hyb_params (the automatic width reads the row lengths of the
// host CSR the caller uploaded). The width is checked as cpu::resolve_hyb_params checks it:
// negative (errc::usage), beyond the container cap (errc::usage) or the 32-bit slot index
// (errc::unsupported), the last two with the CPU's messages. Out of device memory:
// errc::device naming the conversion and the allocation.
template <class V>
hyb<V, std::int32_t, device> csr_to_hyb(const csr<V, std::int32_t, device>& a, const hyb_params& resolved,
                                        gpu_context& ctx);

// HYB (valid: validate() holds on its host copy) -> the CSR it was made from, equal to
// cpu::hyb_to_csr: row r is its ELL entries in slot order, then its tail entries.
template <class V>
csr<V, std::int32_t, device> hyb_to_csr(const hyb<V, std::int32_t, device>& a, gpu_context& ctx);

}  // namespace spconv::gpu
#endif  // SPCONV_HAVE_CUDA
