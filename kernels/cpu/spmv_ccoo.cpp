#include "kernels/cpu/spmv_ccoo.hpp"

#include <algorithm>
#include <vector>

#include "formats/instantiate.hpp"
#include "formats/parallel.hpp"

namespace spconv::cpu {
namespace {

// What a chunk leaves for the combine step: the sums of its first and last rows.
template <class V>
struct boundary {
  V first = 0, last = 0;
  std::int64_t last_row = 0;  // == the chunk's baseline row when the chunk has one row
};

template <class V>
V finish(V alpha, V sum, V beta, const V* y_row) {
  // beta == 0 must not read y (it may hold NaN or be uninitialised), as in BLAS.
  return beta == V(0) ? alpha * sum : alpha * sum + beta * *y_row;
}

// The work of one thread block (Listing 1.1 for the products, Listing 1.2 for the
// segmented reduction), for one column width W and value encoding.
template <class V, class W, bool Lut>
boundary<V> chunk_product(const ccoo<V>& a, std::int64_t c, std::int64_t e_count, V alpha, const V* x, V beta, V* y) {
  const std::uint8_t code = a.chunk_format[c];
  const std::int64_t nk = a.params.chunk_k, groups = e_count / nk;
  const ccoo_layout l = ccoo_chunk_layout(e_count, static_cast<std::int32_t>(nk), code, sizeof(V));
  const std::uint8_t* p = a.blob.data() + a.chunk_ptr[c];
  const std::uint8_t* roff = (code & ccoo_code::single_row) ? nullptr : p + l.rows;
  const std::uint8_t* bitmap = (code & ccoo_code::pads) ? p + l.pads : nullptr;
  const std::uint8_t* cols = p + l.cols;
  const std::uint8_t* vals = p + l.values;
  const V* table = a.table.data();
  const V* xb = x + a.chunk_col[c];
  const std::int64_t base_row = a.chunk_row[c];

  boundary<V> out;
  bool first_run = true;
  std::int64_t run_off = 0;
  V acc = 0;
  for (std::int64_t g = 0; g < groups; ++g) {
    // One thread: its K products, in order.
    V s = 0;
    for (std::int64_t e = g * nk; e < (g + 1) * nk; ++e) {
      if (ccoo_is_pad(bitmap, e)) continue;
      const V v = Lut ? table[vals[e]] : ccoo_load<V>(vals + e * sizeof(V));
      s += v * xb[ccoo_load<W>(cols + e * sizeof(W))];
    }
    // Segmented reduction: a new row offset closes the previous run.
    const std::int64_t off = roff ? roff[g] : 0;
    if (off != run_off) {
      if (first_run)
        out.first = acc;
      else
        y[base_row + run_off] = finish(alpha, acc, beta, y + base_row + run_off);
      first_run = false;
      run_off = off;
      acc = s;
    } else {
      acc += s;
    }
  }
  if (first_run)
    out.first = acc;
  else
    out.last = acc;
  out.last_row = base_row + run_off;
  return out;
}

}  // namespace

template <class V>
void spmv(const ccoo<V>& a, V alpha, const V* x, V beta, V* y) {
  const std::int64_t chunks = static_cast<std::int64_t>(a.chunk_format.size());
  if (chunks == 0) {
    // No entries (and, without columns, no padding): every row is an empty sum.
    parallel_for(a.rows, 1 << 14, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) y[r] = finish(alpha, V(0), beta, y + r);
    });
    return;
  }
  const std::int64_t chunk_entries = std::int64_t{a.params.chunk_b} * a.params.chunk_k, entries = a.entries();
  std::vector<boundary<V>> ends(static_cast<std::size_t>(chunks));
  parallel_for(chunks, 8, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t e_count = std::min(chunk_entries, entries - c * chunk_entries);
      const std::uint8_t code = a.chunk_format[c];
      const bool lut = code & ccoo_code::lut;
      switch (ccoo_code::width_code(code)) {
        case 0:
          ends[c] = lut ? chunk_product<V, std::uint8_t, true>(a, c, e_count, alpha, x, beta, y)
                        : chunk_product<V, std::uint8_t, false>(a, c, e_count, alpha, x, beta, y);
          break;
        case 1:
          ends[c] = lut ? chunk_product<V, std::uint16_t, true>(a, c, e_count, alpha, x, beta, y)
                        : chunk_product<V, std::uint16_t, false>(a, c, e_count, alpha, x, beta, y);
          break;
        default:
          ends[c] = lut ? chunk_product<V, std::uint32_t, true>(a, c, e_count, alpha, x, beta, y)
                        : chunk_product<V, std::uint32_t, false>(a, c, e_count, alpha, x, beta, y);
          break;
      }
    }
  });

  // Boundary rows, in chunk order: a row shared by consecutive chunks gets their partial
  // sums added left to right. These rows are disjoint from the interior rows written above.
  std::int64_t row = -1;
  V acc = 0;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t first_row = a.chunk_row[c];
    if (first_row == row) {
      acc += ends[c].first;
    } else {
      if (row >= 0) y[row] = finish(alpha, acc, beta, y + row);
      row = first_row;
      acc = ends[c].first;
    }
    if (ends[c].last_row != first_row) {
      y[row] = finish(alpha, acc, beta, y + row);
      row = ends[c].last_row;
      acc = ends[c].last;
    }
  }
  y[row] = finish(alpha, acc, beta, y + row);
}

#define SPCONV_INST(V) template void spmv<V>(const ccoo<V>&, V, const V*, V, V*);
SPCONV_FOR_VALUE(SPCONV_INST)
#undef SPCONV_INST

}  // namespace spconv::cpu
