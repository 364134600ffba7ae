// The value x index combinations spconv instantiates; one list for every .cpp that
// explicitly instantiates templates, so the set is declared once.
#pragma once
#include <cstdint>

// X(V, I) for CSR/COO, which also take 64-bit indices for nnz beyond 2^31.
#define SPCONV_FOR_VALUE_INDEX(X) \
  X(float, std::int32_t)          \
  X(double, std::int32_t)         \
  X(float, std::int64_t)          \
  X(double, std::int64_t)

// X(V) for the formats that use 32-bit indices (their packed fields and offsets are 32-bit).
#define SPCONV_FOR_VALUE(X) \
  X(float)                  \
  X(double)
