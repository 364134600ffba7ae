// to_device / to_host: one generic copy driven by each format's own lists (rows, cols,
// params, for_each_array, sync_parts), instantiated for every format spconv stores.
#include <vector>

#include "formats/any_matrix.hpp"
#include "formats/device_array.hpp"
#include "formats/ell.hpp"
#include "formats/instantiate.hpp"

namespace spconv {
namespace {

struct source_array {
  const void* data;
  std::size_t size, element_bytes;
};

// Out and In are the same format template in two spaces, so their for_each_array lists
// name the same arrays, in the same order, with the same element types: the k-th array of
// `in` is copied into the k-th array of the result.
template <class Out, class In, class Copy>
Out copy_format(const In& in, Copy copy) {
  Out out;
  out.rows = in.rows;
  out.cols = in.cols;
  out.params = in.params;
  if constexpr (requires { Out::sync_parts(out); }) Out::sync_parts(out);
  std::vector<source_array> src;
  In::for_each_array(in, [&](std::string_view, const auto& arr) {
    src.push_back({arr.data(), arr.size(), sizeof(*arr.data())});
  });
  std::size_t k = 0;
  Out::for_each_array(out, [&](std::string_view, auto& arr) {
    const source_array& s = src[k++];
    arr.resize(s.size);
    copy(static_cast<void*>(arr.data()), s.data, s.size * s.element_bytes);
  });
  return out;
}

}  // namespace

template <class Fmt>
  requires std::is_same_v<typename Fmt::space, host>
with_space_t<Fmt, device> to_device(const Fmt& m) {
  return copy_format<with_space_t<Fmt, device>>(m, copy_to_device);
}

template <class Fmt>
  requires std::is_same_v<typename Fmt::space, device>
with_space_t<Fmt, host> to_host(const Fmt& m) {
  return copy_format<with_space_t<Fmt, host>>(m, copy_to_host);
}

// Variadic: the format types carry commas (csr<V, I>).
#define SPCONV_INST_FMT(...)                                                           \
  template with_space_t<__VA_ARGS__, device> to_device<__VA_ARGS__>(const __VA_ARGS__&); \
  template with_space_t<__VA_ARGS__, host> to_host<with_space_t<__VA_ARGS__, device>>(   \
      const with_space_t<__VA_ARGS__, device>&);
#define SPCONV_INST_VI(V, I) \
  SPCONV_INST_FMT(csr<V, I>) \
  SPCONV_INST_FMT(coo<V, I>)
#define SPCONV_INST_V(V)  \
  SPCONV_INST_FMT(cmrs<V>) \
  SPCONV_INST_FMT(mbr<V>)  \
  SPCONV_INST_FMT(csr5<V>) \
  SPCONV_INST_FMT(bcsr<V>) \
  SPCONV_INST_FMT(hyb<V>)  \
  SPCONV_INST_FMT(ell<V>)  \
  SPCONV_INST_FMT(ccoo<V>)
SPCONV_FOR_VALUE_INDEX(SPCONV_INST_VI)
SPCONV_FOR_VALUE(SPCONV_INST_V)
#undef SPCONV_INST_V
#undef SPCONV_INST_VI
#undef SPCONV_INST_FMT

}  // namespace spconv
