// CSR5 -> CSR on the CPU: drop tile_ptr and tile_desc and transpose col_idx/values back
// to row-major order inside the complete tiles (liu-thesis-csr5.txt sec. 6.3.6).
// Parallel over tiles; a pure permutation, so the result is bit-exact and independent of
// the thread count.
#include <algorithm>

#include "convert/cpu/csr5.hpp"
#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {

template <class V>
csr<V, std::int32_t> csr5_to_csr(const csr5<V>& a) {
  const std::int64_t nnz = a.nnz();
  if (a.rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1 || a.col_idx.size() != a.values.size() ||
      a.params.omega < 1 || a.params.omega > csr5_max_omega || a.params.sigma < 1 ||
      a.params.sigma > csr5_max_sigma)
    fail(errc::bad_input, "csr5: row_ptr/col_idx/values lengths or params do not match (validate() the matrix first)");
  const csr5_layout L(a.params.omega, a.params.sigma);
  const std::int64_t T = L.tile_size(), omega = L.omega, sigma = L.sigma, complete = nnz / T;

  csr<V, std::int32_t> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr = a.row_ptr;
  out.col_idx.resize(nnz);
  out.values.resize(nnz);
  parallel_for(complete, std::max<std::int64_t>(1, (std::int64_t{1} << 15) / T),
               [&](std::int64_t t0, std::int64_t t1) {
                 for (std::int64_t t = t0; t < t1; ++t) {
                   const std::int64_t base = t * T;
                   for (std::int64_t i = 0; i < omega; ++i)
                     for (std::int64_t j = 0; j < sigma; ++j) {
                       out.col_idx[base + i * sigma + j] = a.col_idx[base + j * omega + i];
                       out.values[base + i * sigma + j] = a.values[base + j * omega + i];
                     }
                 }
               });
  std::copy(a.col_idx.begin() + complete * T, a.col_idx.end(), out.col_idx.begin() + complete * T);
  std::copy(a.values.begin() + complete * T, a.values.end(), out.values.begin() + complete * T);
  return out;
}

#define SPCONV_INST(V) template csr<V, std::int32_t> csr5_to_csr<V>(const csr5<V>&);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
