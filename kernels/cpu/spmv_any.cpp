#include "kernels/cpu/spmv.hpp"

#include "kernels/cpu/spmv_bcsr.hpp"
#include "kernels/cpu/spmv_ccoo.hpp"
#include "kernels/cpu/spmv_cmrs.hpp"
#include "kernels/cpu/spmv_coo.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/cpu/spmv_csr5.hpp"
#include "kernels/cpu/spmv_hyb.hpp"
#include "kernels/cpu/spmv_mbr.hpp"

namespace spconv::cpu {

template <class V>
void spmv(const any_matrix& a, V alpha, const V* x, V beta, V* y) {
  std::visit(
      [&](const auto& m) {
        using M = std::remove_cvref_t<decltype(m)>;
        if constexpr (std::is_same_v<typename M::value_type, V>)
          spmv(m, alpha, x, beta, y);
        else
          fail(errc::usage, std::string("spmv: the matrix holds ") + std::string(type_name<typename M::value_type>()) +
                                " values, the vectors are " + std::string(type_name<V>()));
      },
      a);
}

template void spmv<float>(const any_matrix&, float, const float*, float, float*);
template void spmv<double>(const any_matrix&, double, const double*, double, double*);

}  // namespace spconv::cpu
