// A downstream program built against the installed spconv package: it loads a pre-converted
// container (argv[1], holding csr and hyb) as CSR and as HYB, multiplies with each through the
// library and checks every product against a plain loop over the CSR arrays, to the accuracy
// rule of specs/formats/csr.md (cpu::spmv_tolerance). With a GPU (library built with CUDA and a
// device present) the same on the device through load<Fmt> and gpu::spmv. Prints one line;
// exit 0 when every product is within the tolerance, 1 otherwise, 2 on an error.
#include <spconv/spconv.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

// The product by definition, y_i = sum_j a_ij x_j, with its rounding scale sum_j |a_ij x_j|.
struct reference {
  std::vector<double> x, y, scale;
  double tolerance = 0;
};

reference naive_product(const spconv::csr<double>& a) {
  reference r;
  r.x.resize(static_cast<std::size_t>(a.cols));
  for (std::size_t j = 0; j < r.x.size(); ++j) r.x[j] = 1.0 + 0.25 * static_cast<double>(j % 7);
  r.y.assign(static_cast<std::size_t>(a.rows), 0.0);
  r.scale.assign(static_cast<std::size_t>(a.rows), 0.0);
  std::int64_t longest = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) {
    longest = std::max<std::int64_t>(longest, a.row_ptr[i + 1] - a.row_ptr[i]);
    for (auto k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const double p = a.values[k] * r.x[a.col_idx[k]];
      r.y[i] += p;
      r.scale[i] += std::abs(p);
    }
  }
  r.tolerance = spconv::cpu::spmv_tolerance<double>(longest);
  return r;
}

// The largest per-row error in units of the row's scale (a row of scale 0 must be exact).
double max_error(const reference& ref, const std::vector<double>& y) {
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double d = std::abs(y[i] - ref.y[i]);
    const double e = ref.scale[i] > 0 ? d / ref.scale[i] : (d == 0 ? 0.0 : INFINITY);
    worst = std::max(worst, std::isnan(d) ? INFINITY : e);
  }
  return worst;
}

struct outcome {
  std::string checked;  // "cpu csr, cpu hyb, ..."
  double worst = 0;
  void add(const std::string& what, double err) {
    checked += (checked.empty() ? "" : ", ") + what;
    worst = std::max(worst, err);
  }
};

template <class Fmt>
void check_host(const std::filesystem::path& path, const char* what, const reference& ref, outcome& out) {
  const Fmt a = spconv::read<Fmt>(path);
  std::vector<double> y(static_cast<std::size_t>(a.rows));
  spconv::cpu::spmv(a, 1.0, ref.x.data(), 0.0, y.data());
  out.add(what, max_error(ref, y));
}

#ifdef SPCONV_HAVE_CUDA
template <class Fmt>
void check_device(const std::filesystem::path& path, const char* what, const reference& ref, outcome& out,
                  spconv::gpu_context& ctx) {
  const auto a = spconv::load<Fmt>(path, ctx);
  spconv::device_array<double> x, y(static_cast<std::size_t>(a.rows));
  x.upload(ref.x.data(), ref.x.size());
  spconv::gpu::spmv(a, 1.0, x.data(), 0.0, y.data(), ctx);
  ctx.synchronize();
  std::vector<double> host(y.size());
  y.download(host.data());
  out.add(what, max_error(ref, host));
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CONTAINER.h5 (holding csr and hyb)\n", argv[0]);
    return 2;
  }
  const std::filesystem::path path = argv[1];
  try {
    const auto a = spconv::read<spconv::csr<double>>(path);
    const reference ref = naive_product(a);
    outcome out;
    check_host<spconv::csr<double>>(path, "cpu csr", ref, out);
    check_host<spconv::hyb<double>>(path, "cpu hyb", ref, out);
#ifdef SPCONV_HAVE_CUDA
    if (spconv::gpu_available()) {
      spconv::gpu_context ctx;
      check_device<spconv::csr<double>>(path, "gpu csr", ref, out, ctx);
      check_device<spconv::hyb<double>>(path, "gpu hyb", ref, out, ctx);
    }
#endif
    const bool ok = out.worst <= ref.tolerance;
    std::printf("spconv downstream: %s (%lld x %lld, %lld entries): %s: max relative error %.3g, tolerance %.3g: %s\n",
                path.filename().c_str(), static_cast<long long>(a.rows), static_cast<long long>(a.cols),
                static_cast<long long>(a.nnz()), out.checked.c_str(), out.worst, ref.tolerance, ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
  } catch (const spconv::error& e) {
    std::fprintf(stderr, "spconv downstream: %s: %s\n", spconv::errc_name(e.code()), e.what());
    return 2;
  }
}
