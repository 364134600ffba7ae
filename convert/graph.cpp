#include "convert/graph.hpp"

#include <limits>

#include "convert/cpu/bcsr.hpp"
#include "convert/cpu/ccoo.hpp"
#include "convert/cpu/cmrs.hpp"
#include "convert/cpu/csr5.hpp"
#include "convert/cpu/csr_coo.hpp"
#include "convert/cpu/hyb.hpp"
#include "convert/cpu/mbr.hpp"

namespace spconv {
namespace {

// Any stored format -> canonical CSR with its own value and index types.
template <class V, class I>
csr<V, I> to_csr(const csr<V, I>& a) {
  return a;
}
template <class V, class I>
csr<V, I> to_csr(const coo<V, I>& a) {
  return cpu::coo_to_csr(a);
}
template <class V>
csr<V, std::int32_t> to_csr(const cmrs<V>& a) {
  return cpu::cmrs_to_csr(a);
}
template <class V>
csr<V, std::int32_t> to_csr(const mbr<V>& a) {
  return cpu::mbr_to_csr(a);
}
template <class V>
csr<V, std::int32_t> to_csr(const csr5<V>& a) {
  return cpu::csr5_to_csr(a);
}
template <class V>
csr<V, std::int32_t> to_csr(const bcsr<V>& a) {
  return cpu::bcsr_to_csr(a);
}
template <class V>
csr<V, std::int32_t> to_csr(const hyb<V>& a) {
  return cpu::hyb_to_csr(a);
}
template <class V>
csr<V, std::int32_t> to_csr(const ccoo<V>& a) {
  return cpu::ccoo_to_csr(a);
}

template <class To, class A>
array<To> cast_array(const A& a) {
  return array<To>(a.begin(), a.end());
}

// CSR with value type V2 and index type I2: a value cast and/or index widening or
// narrowing (narrowing refuses what does not fit).
template <class V2, class I2, class V, class I>
csr<V2, I2> retype(csr<V, I>&& a) {
  if constexpr (std::is_same_v<V, V2> && std::is_same_v<I, I2>) {
    return std::move(a);
  } else {
    check_index_fits(index_type_of<I2>(), a.rows, a.cols, a.nnz());
    csr<V2, I2> out;
    out.rows = a.rows;
    out.cols = a.cols;
    out.row_ptr = cast_array<I2>(a.row_ptr);
    out.col_idx = cast_array<I2>(a.col_idx);
    out.values = cast_array<V2>(a.values);
    return out;
  }
}

// The formats other than CSR/COO take 32-bit CSR (their offsets and packed fields are 32-bit).
template <class V>
any_matrix from_csr32(const csr<V, std::int32_t>& a, std::string_view target, const convert_options& o) {
  if (target == "cmrs") return cpu::csr_to_cmrs(a, o.cmrs);
  if (target == "mbr") return cpu::csr_to_mbr(a, o.mbr);
  if (target == "csr5") return cpu::csr_to_csr5(a, o.csr5, o.csr5_for);
  if (target == "bcsr") return cpu::csr_to_bcsr(a, o.bcsr);
  if (target == "hyb") return cpu::csr_to_hyb(a, o.hyb);
  if (target == "ccoo") return cpu::csr_to_ccoo(a, o.ccoo);
  fail(errc::usage, "unknown format '" + std::string(target) + "'");
}

template <class V, class I>
any_matrix from_csr(csr<V, I>&& a, std::string_view target, const convert_options& o) {
  if (target == "csr") return any_matrix(std::move(a));
  if (target == "coo") return any_matrix(cpu::csr_to_coo(a));
  if constexpr (std::is_same_v<I, std::int32_t>)
    return from_csr32(a, target, o);
  else
    return from_csr32(retype<V, std::int32_t>(std::move(a)), target, o);
}

template <class V2, class I2, class M>
any_matrix retarget(const M& in, std::string_view target, const convert_options& o) {
  return from_csr(retype<V2, I2>(to_csr(in)), target, o);
}

// The target's parameters made concrete by its rule, on the CSR the converter would receive.
template <class V>
void resolve_for(const csr<V, std::int32_t>& a, std::string_view target, convert_options& o) {
  if (target == "cmrs") o.cmrs = cpu::resolve_cmrs_params(a, o.cmrs);
  else if (target == "mbr") o.mbr = cpu::resolve_mbr_params(a, o.mbr);
  else if (target == "csr5") o.csr5 = cpu::resolve_csr5_params(a, o.csr5, o.csr5_for);
  else if (target == "bcsr") o.bcsr = cpu::resolve_bcsr_params(a, o.bcsr);
  else if (target == "hyb") o.hyb = cpu::resolve_hyb_params(a, o.hyb);
  else if (target == "ccoo") o.ccoo = cpu::resolve_ccoo_params(a, o.ccoo);
}

}  // namespace

void check_index_fits(index_type it, std::int64_t rows, std::int64_t cols, std::int64_t nnz) {
  const std::int64_t lim = it == index_type::i32 ? std::numeric_limits<std::int32_t>::max()
                                                 : std::numeric_limits<std::int64_t>::max();
  if (rows > lim || cols > lim || nnz > lim)
    fail(errc::unsupported, "matrix " + std::to_string(rows) + " x " + std::to_string(cols) + " with " +
                                std::to_string(nnz) + " entries does not fit " +
                                std::string(it == index_type::i32 ? type_name<std::int32_t>()
                                                                  : type_name<std::int64_t>()) +
                                " indices");
}

convert_options resolve_params(const any_matrix& in, std::string_view target, const convert_options& opt) {
  check_format_name(target);
  convert_options out = opt;
  if (target == "csr" || target == "coo") return out;
  const value_type vt = opt.values.value_or(value_type_of(in));
  std::visit(
      [&](const auto& m) {
        if (vt == value_type::f32) resolve_for(retype<float, std::int32_t>(to_csr(m)), target, out);
        else resolve_for(retype<double, std::int32_t>(to_csr(m)), target, out);
      },
      in);
  return out;
}

any_matrix convert(const any_matrix& in, std::string_view target, const convert_options& opt) {
  check_format_name(target);
  const value_type vt = opt.values.value_or(value_type_of(in));
  const index_type it = opt.index.value_or(index_type_of(in));
  return std::visit(
      [&](const auto& m) -> any_matrix {
        if (vt == value_type::f32)
          return it == index_type::i32 ? retarget<float, std::int32_t>(m, target, opt)
                                       : retarget<float, std::int64_t>(m, target, opt);
        return it == index_type::i32 ? retarget<double, std::int32_t>(m, target, opt)
                                     : retarget<double, std::int64_t>(m, target, opt);
      },
      in);
}

}  // namespace spconv
