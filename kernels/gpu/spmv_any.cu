// gpu::spmv on an any_device_matrix: the format's own GPU kernel.
#include <string>
#include <type_traits>

#include "formats/instantiate.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_any.hpp"
#include "kernels/gpu/spmv_bcsr.hpp"
#include "kernels/gpu/spmv_ccoo.hpp"
#include "kernels/gpu/spmv_cmrs.hpp"
#include "kernels/gpu/spmv_coo.hpp"
#include "kernels/gpu/spmv_csr5.hpp"
#include "kernels/gpu/spmv_csr_hola.hpp"
#include "kernels/gpu/spmv_hyb.hpp"
#include "kernels/gpu/spmv_mbr.hpp"

namespace spconv::gpu {

template <class V>
void spmv(const any_device_matrix& a, V alpha, const V* x, V beta, V* y, gpu_context& ctx, csr_method csr_with) {
  std::visit(
      [&](const auto& m) {
        using M = std::remove_cvref_t<decltype(m)>;
        if constexpr (!std::is_same_v<typename M::value_type, V>) {
          fail(errc::usage, "gpu::spmv: the matrix holds " + std::string(type_name<typename M::value_type>()) +
                                " values, the vectors " + std::string(type_name<V>()));
        } else if constexpr (std::is_same_v<M, csr<V, typename M::index_type, device>>) {
          if (csr_with == csr_method::hola) spmv_hola(m, alpha, x, beta, y, ctx);
          else if (csr_with == csr_method::cusparse) spmv_cusparse(m, alpha, x, beta, y, ctx);
          else spmv(m, alpha, x, beta, y, ctx);
        } else {
          spmv(m, alpha, x, beta, y, ctx);
        }
      },
      a);
}

#define SPCONV_INST(V) \
  template void spmv<V>(const any_device_matrix&, V, const V*, V, V*, gpu_context&, csr_method);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::gpu
