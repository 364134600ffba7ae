// COO reference SpMV, y = alpha*A*x + beta*y, on the triplets as they are (any order,
// duplicates allowed).
#pragma once
#include "formats/coo.hpp"

namespace spconv::cpu {

template <class V, class I>
void spmv(const coo<V, I>& a, V alpha, const V* x, V beta, V* y);

}  // namespace spconv::cpu
