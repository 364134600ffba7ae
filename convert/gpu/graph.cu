// The converter graph on the GPU: the same edges as convert/graph.cpp (X -> CSR, value and
// index casts, CSR -> target), each edge a GPU converter of convert/gpu/.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "convert/gpu/bcsr.hpp"
#include "convert/gpu/ccoo.hpp"
#include "convert/gpu/cmrs.hpp"
#include "convert/gpu/csr5.hpp"
#include "convert/gpu/csr_coo.hpp"
#include "convert/gpu/graph.hpp"
#include "convert/gpu/hyb.hpp"
#include "convert/gpu/mbr.hpp"
#include "formats/device_kernel.cuh"

namespace spconv::gpu {
namespace {

// Value casts bit-identical to the host's (x86-64 cvtsd2ss / cvtss2sd, which the CPU graph's
// static_cast compiles to): finite values and infinities round to nearest even, subnormals
// included; a NaN keeps its sign and the top bits of its payload, with the quiet bit set. The
// GPU's own conversion would canonicalise NaNs, so NaNs are built from their bits here.
template <class To, class From>
__device__ __forceinline__ To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, double>) {
    if (v != v) {
      const auto bits = static_cast<unsigned long long>(__double_as_longlong(v));
      const auto sign = static_cast<unsigned>(bits >> 63) << 31;
      const auto payload = static_cast<unsigned>((bits & 0xFFFFFFFFFFFFFull) >> 29);
      return __uint_as_float(sign | 0x7FC00000u | payload);
    }
    return static_cast<float>(v);
  } else if constexpr (std::is_same_v<To, double> && std::is_same_v<From, float>) {
    if (v != v) {
      const unsigned bits = __float_as_uint(v);
      const unsigned long long sign = static_cast<unsigned long long>(bits >> 31) << 63;
      const unsigned long long payload = static_cast<unsigned long long>(bits & 0x7FFFFFu) << 29;
      return __longlong_as_double(static_cast<long long>(sign | 0x7FF8000000000000ull | payload));
    }
    return static_cast<double>(v);
  } else {
    return static_cast<To>(v);  // indices: the range was checked before
  }
}

template <class To, class From>
__global__ void cast_kernel(std::int64_t n, const From* __restrict__ in, To* __restrict__ out) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = cast_value<To>(in[i]);
}

// A new device array holding `a`'s elements as To (a plain copy when the types agree).
template <class To, class From>
device_array<To> cast_array(const device_array<From>& a, gpu_context& ctx) {
  device_array<To> out(a.size());
  if (a.empty()) return out;
  const auto s = static_cast<cudaStream_t>(ctx.stream());
  if constexpr (std::is_same_v<To, From>) {
    copy_on_device(out.data(), a.data(), static_cast<std::int64_t>(a.size()), ctx, "gpu::convert: copying an array");
  } else {
    constexpr int threads = 256;
    cast_kernel<To, From><<<launch_blocks(static_cast<std::int64_t>(a.size()), threads), threads, 0, s>>>(
        static_cast<std::int64_t>(a.size()), a.data(), out.data());
    check_cuda(cudaGetLastError(), "gpu::convert: launching the cast kernel");
  }
  return out;
}

template <class V, class I>
using dcsr = csr<V, I, device>;

// A new CSR with `a`'s arrays cast to V2 and I2 (indices must fit: checked by the caller).
template <class V2, class I2, class V, class I>
dcsr<V2, I2> cast_csr(const dcsr<V, I>& a, gpu_context& ctx) {
  dcsr<V2, I2> out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.row_ptr = cast_array<I2>(a.row_ptr, ctx);
  out.col_idx = cast_array<I2>(a.col_idx, ctx);
  out.values = cast_array<V2>(a.values, ctx);
  return out;
}

// Any stored format -> canonical CSR with its own value and index types (a copy for CSR).
template <class V, class I>
dcsr<V, I> to_csr(const dcsr<V, I>& a, gpu_context& ctx) {
  return cast_csr<V, I>(a, ctx);
}
template <class V, class I>
dcsr<V, I> to_csr(const coo<V, I, device>& a, gpu_context& ctx) {
  return coo_to_csr(a, ctx);
}
template <class Fmt>
auto to_csr(const Fmt& a, gpu_context& ctx) {
  if constexpr (std::is_same_v<Fmt, cmrs<typename Fmt::value_type, std::int32_t, device>>) return cmrs_to_csr(a, ctx);
  else if constexpr (std::is_same_v<Fmt, mbr<typename Fmt::value_type, std::int32_t, device>>) return mbr_to_csr(a, ctx);
  else if constexpr (std::is_same_v<Fmt, csr5<typename Fmt::value_type, std::int32_t, device>>) return csr5_to_csr(a, ctx);
  else if constexpr (std::is_same_v<Fmt, bcsr<typename Fmt::value_type, std::int32_t, device>>) return bcsr_to_csr(a, ctx);
  else if constexpr (std::is_same_v<Fmt, hyb<typename Fmt::value_type, std::int32_t, device>>) return hyb_to_csr(a, ctx);
  else return ccoo_to_csr(a, ctx);
}

// CSR with value type V2 and index type I2 (narrowing refuses what does not fit, as the CPU
// graph does).
template <class V2, class I2, class V, class I>
dcsr<V2, I2> retype(dcsr<V, I>&& a, gpu_context& ctx) {
  if constexpr (std::is_same_v<V, V2> && std::is_same_v<I, I2>) {
    return std::move(a);
  } else {
    check_index_fits(index_type_of<I2>(), a.rows, a.cols, static_cast<std::int64_t>(a.col_idx.size()));
    return cast_csr<V2, I2>(a, ctx);
  }
}

// Whether any numeric field of a parameter set asks for the automatic rule (0); flags (bool)
// have no automatic value.
template <class P>
bool has_automatic(const P& p) {
  bool any = false;
  P::for_each_param(p, [&](std::string_view, const auto& v) {
    if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(v)>, bool>) any |= v == 0;
  });
  return any;
}

bool needs_resolution(std::string_view target, const convert_options& o) {
  if (target == "cmrs") return has_automatic(o.cmrs);
  if (target == "mbr") return has_automatic(o.mbr);
  if (target == "csr5") return has_automatic(o.csr5);
  if (target == "bcsr") return has_automatic(o.bcsr);
  if (target == "hyb") return has_automatic(o.hyb);
  if (target == "ccoo") return has_automatic(o.ccoo);
  return false;
}

template <class V>
any_device_matrix from_csr32(const dcsr<V, std::int32_t>& a, std::string_view target, const convert_options& opt,
                             gpu_context& ctx) {
  // The automatic rules read the CSR's structure on the host (see graph.hpp).
  const convert_options o = needs_resolution(target, opt) ? resolve_params(any_matrix(to_host(a)), target, opt) : opt;
  if (target == "cmrs") return csr_to_cmrs(a, o.cmrs, ctx);
  if (target == "mbr") return csr_to_mbr(a, o.mbr, ctx);
  if (target == "csr5") return csr_to_csr5(a, o.csr5, ctx);
  if (target == "bcsr") return csr_to_bcsr(a, o.bcsr, ctx);
  if (target == "hyb") return csr_to_hyb(a, o.hyb, ctx);
  return csr_to_ccoo(a, o.ccoo, ctx);
}

template <class V, class I>
any_device_matrix from_csr(dcsr<V, I>&& a, std::string_view target, const convert_options& o, gpu_context& ctx) {
  if (target == "csr") return any_device_matrix(std::move(a));
  if (target == "coo") return any_device_matrix(csr_to_coo(a, ctx));
  if constexpr (std::is_same_v<I, std::int32_t>)
    return from_csr32(a, target, o, ctx);
  else
    return from_csr32(retype<V, std::int32_t>(std::move(a), ctx), target, o, ctx);
}

template <class V2, class I2, class M>
any_device_matrix retarget(const M& in, std::string_view target, const convert_options& o, gpu_context& ctx) {
  // A CSR of the wanted types is converted from as it is: copying it first (to_csr's copy)
  // would cost as much as an SpMV. Only CSR -> CSR, whose result is a new matrix, copies.
  if constexpr (std::is_same_v<M, dcsr<V2, I2>>) {
    if (target == "coo") return any_device_matrix(csr_to_coo(in, ctx));
    if constexpr (std::is_same_v<I2, std::int32_t>)
      if (target != "csr") return from_csr32(in, target, o, ctx);
  }
  return from_csr(retype<V2, I2>(to_csr(in, ctx), ctx), target, o, ctx);
}

}  // namespace

any_device_matrix convert(const any_device_matrix& in, std::string_view target, const convert_options& opt,
                          gpu_context& ctx) {
  check_format_name(target);
  const value_type vt = opt.values.value_or(value_type_of(in));
  const index_type it = opt.index.value_or(index_type_of(in));
  any_device_matrix out = std::visit(
      [&](const auto& m) -> any_device_matrix {
        if (vt == value_type::f32)
          return it == index_type::i32 ? retarget<float, std::int32_t>(m, target, opt, ctx)
                                       : retarget<float, std::int64_t>(m, target, opt, ctx);
        return it == index_type::i32 ? retarget<double, std::int32_t>(m, target, opt, ctx)
                                     : retarget<double, std::int64_t>(m, target, opt, ctx);
      },
      in);
  ctx.synchronize();  // the casts and copies are queued; the result is complete on return
  return out;
}

}  // namespace spconv::gpu
