// bench_gpu [INPUT...] [--shared DIR] [--repeat R] [--loop N] [--scale-to NNZ]
// GPU SpMV of every format against cuSPARSE, and what the GPU conversion CSR -> X costs.
// INPUT: Matrix Market files or directories of them (default: DIR/matrices/real, DIR the
// shared folder: --shared, else SPCONV_SHARED_DIR, else the one beside the source tree).
// Per matrix (read as double CSR, complex files skipped), optionally replicated along the
// diagonal to at least NNZ entries (kron(I_K, A)), copied to the device:
//   - the device-to-device copy rate for a buffer as large as the CSR arrays, the ceiling of a
//     bandwidth-bound kernel (measure_copy_bandwidth, read + write bytes);
//   - y = A*x (alpha 1, beta 0) by cuSPARSE (the baseline), our CSR kernel and the GPU kernel
//     of CMRS, MBR, CSR5, BCSR, HYB and CCOO: per kernel the median over R batches (after a
//     warm-up batch) of a batch of N SpMVs timed on the host between two ctx.synchronize()
//     calls, divided by N; effective GB/s over the bytes an SpMV must move at least (the
//     format's arrays, x read once, y written once) and that rate as a share of the copy rate;
//   - each format's parameters resolved on the host (cpu::resolve_X_params, the automatic
//     rules), then gpu::csr_to_X timed (median of R after a warm-up run, result freed outside
//     the timed interval), reported in cuSPARSE SpMV times.
// Every kernel's result is checked once against cuSPARSE's; '!' marks one beyond the bound.
#include <cstdio>

#ifndef SPCONV_HAVE_CUDA

int main() {
  std::printf("bench_gpu: built without CUDA\n");
  return 0;
}

#else

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "convert/cpu/bcsr.hpp"
#include "convert/cpu/ccoo.hpp"
#include "convert/cpu/cmrs.hpp"
#include "convert/cpu/csr5.hpp"
#include "convert/cpu/hyb.hpp"
#include "convert/cpu/mbr.hpp"
#include "convert/gpu/bcsr.hpp"
#include "convert/gpu/ccoo.hpp"
#include "convert/gpu/cmrs.hpp"
#include "convert/gpu/csr5.hpp"
#include "convert/gpu/hyb.hpp"
#include "convert/gpu/mbr.hpp"
#include "formats/device.hpp"
#include "formats/parallel.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv_csr.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_bcsr.hpp"
#include "kernels/gpu/spmv_ccoo.hpp"
#include "kernels/gpu/spmv_cmrs.hpp"
#include "kernels/gpu/spmv_csr5.hpp"
#include "kernels/gpu/spmv_hyb.hpp"
#include "kernels/gpu/spmv_mbr.hpp"

namespace fs = std::filesystem;
using namespace spconv;

namespace {

using clock_type = std::chrono::steady_clock;
using host_csr = csr<double, std::int32_t>;
using device_csr = csr<double, std::int32_t, device>;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

// Seconds per call of `spmv`: the median over `repeat` batches of `loop` calls, after one
// warm-up batch (clocks ramp up, caches and the cuSPARSE workspace settle). The calls only
// queue work, so a batch is timed from an idle stream to the stream drained again.
template <class F>
double time_spmv(gpu_context& ctx, int loop, int repeat, F&& spmv) {
  auto batch = [&] {
    ctx.synchronize();
    const auto t0 = clock_type::now();
    for (int i = 0; i < loop; ++i) spmv();
    ctx.synchronize();
    return seconds_since(t0) / loop;
  };
  batch();
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) t.push_back(batch());
  return median(t);
}

// Seconds of one conversion: the median of `repeat` runs after the warm-up run whose result
// `keep` receives (the matrix the kernel then runs on). A conversion returns when its result
// is complete; the results of the timed runs are freed after the clock stops.
template <class F, class R>
double time_conversion(int repeat, F&& convert, std::optional<R>& keep) {
  keep.emplace(convert());
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = clock_type::now();
    const R result = convert();
    t.push_back(seconds_since(t0));
  }
  return median(t);
}

// bytes() of formats/format.hpp reads sizeof(arr[0]), which device arrays do not offer: the
// same count from the element type.
template <class Fmt>
std::size_t device_bytes(const Fmt& m) {
  std::size_t total = 0;
  Fmt::for_each_array(m, [&](std::string_view, const auto& arr) {
    total += arr.size() * sizeof(typename std::remove_cvref_t<decltype(arr)>::value_type);
  });
  return total;
}

template <class P>
std::string describe_params(const P& p) {
  std::string s;
  P::for_each_param(p, [&](std::string_view name, const auto& v) {
    if (!s.empty()) s += ' ';
    s.append(name);
    s += '=';
    s += std::to_string(static_cast<long long>(v));
  });
  return s;
}

// kron(I_k, a): k copies of `a` along the diagonal, built as CSR directly (copy b's row r is
// row b*rows + r, its columns shifted by b*cols). Beyond the 32-bit indices: errc::unsupported.
host_csr replicate(const host_csr& a, std::int64_t k) {
  constexpr std::int64_t max_index = std::numeric_limits<std::int32_t>::max();
  const std::int64_t nnz = a.nnz();
  if (a.rows * k > max_index || a.cols * k > max_index || nnz * k > max_index)
    fail(errc::unsupported, "bench_gpu: " + std::to_string(k) + " diagonal copies of a " + std::to_string(a.rows) +
                                " x " + std::to_string(a.cols) + " matrix with " + std::to_string(nnz) +
                                " entries exceed the 32-bit indices");
  host_csr out;
  out.rows = a.rows * k;
  out.cols = a.cols * k;
  out.row_ptr.resize(static_cast<std::size_t>(out.rows) + 1);
  out.col_idx.resize(static_cast<std::size_t>(nnz * k));
  out.values.resize(static_cast<std::size_t>(nnz * k));
  parallel_for(k, 1, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t b = lo; b < hi; ++b) {
      const auto row0 = static_cast<std::size_t>(b * a.rows);
      const auto entry0 = static_cast<std::size_t>(b * nnz);
      const auto col0 = static_cast<std::int32_t>(b * a.cols);
      for (std::int64_t r = 0; r < a.rows; ++r)
        out.row_ptr[row0 + static_cast<std::size_t>(r)] = static_cast<std::int32_t>(entry0) + a.row_ptr[r];
      for (std::int64_t e = 0; e < nnz; ++e) {
        out.col_idx[entry0 + static_cast<std::size_t>(e)] = col0 + a.col_idx[e];
        out.values[entry0 + static_cast<std::size_t>(e)] = a.values[e];
      }
    }
  });
  out.row_ptr[static_cast<std::size_t>(out.rows)] = static_cast<std::int32_t>(nnz * k);
  return out;
}

// The largest |y[r] - ref[r]| / sum_j |a_rj * x_j| over the rows (the error bound's scale, as
// in cpu::spmv_max_rel_error); a row of scale 0 must match exactly; NaN counts as infinite.
double max_rel_error(const std::vector<double>& scale, const std::vector<double>& ref, const std::vector<double>& y) {
  double worst = 0;
  for (std::size_t r = 0; r < y.size(); ++r) {
    const double d = std::abs(y[r] - ref[r]);
    double e = scale[r] > 0 ? d / scale[r] : (d == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (std::isnan(e)) e = std::numeric_limits<double>::infinity();
    worst = std::max(worst, e);
  }
  return worst;
}

struct kernel_figures {
  std::string kernel, params;
  std::string refused;      // the message when the conversion or the kernel threw
  double spmv_s = 0;        // seconds per SpMV
  double convert_s = -1;    // seconds of CSR -> X on the GPU (-1: none, the CSR kernels)
  std::size_t bytes = 0;    // the format's arrays
  double error = 0;         // max_rel_error against cuSPARSE
  bool ok = true;
};

struct matrix_figures {
  std::string name;
  std::int64_t rows = 0, cols = 0, nnz = 0, copies = 1;
  double copy_rate = 0;  // bytes per second, read + write
  int loop = 0;
  std::vector<kernel_figures> kernels;  // cuSPARSE first
};

class matrix_bench {
 public:
  matrix_bench(gpu_context& ctx, const host_csr& a, int repeat, int loop)
      : ctx_(ctx), a_(a), repeat_(repeat), da_(to_device(a)) {
    std::vector<double> x(static_cast<std::size_t>(a.cols));
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = 1.0 + static_cast<double>(j % 17) / 16.0;
    dx_.upload(x.data(), x.size());
    dy_.resize(static_cast<std::size_t>(a.rows));
    scale_.assign(static_cast<std::size_t>(a.rows), 0.0);
    std::int64_t max_row = 0;
    for (std::int64_t r = 0; r < a.rows; ++r) {
      max_row = std::max<std::int64_t>(max_row, a.row_ptr[r + 1] - a.row_ptr[r]);
      for (std::int32_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
        scale_[static_cast<std::size_t>(r)] += std::abs(a.values[k]) * x[static_cast<std::size_t>(a.col_idx[k])];
    }
    // Both products may err by the CPU reference's bound from the exact one, in either
    // direction: twice that bound between them.
    bound_ = 2 * cpu::spmv_tolerance<double>(max_row);
    gpu::spmv_cusparse(da_, 1.0, dx_.data(), 0.0, dy_.data(), ctx_);
    reference_.resize(dy_.size());
    dy_.download(reference_.data());
    // A batch lasts about 10 ms of cuSPARSE time: long against the microseconds of a launch
    // and of the two synchronisations, short enough for every matrix of the set.
    loop_ = loop;
    if (loop_ <= 0) {
      const double once = time_spmv(ctx_, 10, 1, [&] { cusparse(); });
      loop_ = static_cast<int>(std::clamp(std::ceil(0.01 / std::max(once, 1e-9)), 10.0, 5000.0));
    }
  }

  int loop() const { return loop_; }

  kernel_figures run_cusparse() {
    kernel_figures f;
    f.kernel = "cusparse";
    f.params = "ALG_DEFAULT";
    f.bytes = device_bytes(da_);
    f.spmv_s = time_spmv(ctx_, loop_, repeat_, [&] { cusparse(); });
    check(f);
    return f;
  }

  kernel_figures run_csr() {
    kernel_figures f;
    f.kernel = "csr";
    f.params = gpu::choose_csr_kernel(a_.rows, a_.nnz()) == gpu::csr_kernel::warp_per_row ? "warp_per_row"
                                                                                           : "thread_per_row";
    f.bytes = device_bytes(da_);
    run_kernel(f, [&] { gpu::spmv(da_, 1.0, dx_.data(), 0.0, dy_.data(), ctx_); });
    return f;
  }

  // Resolve on the host, convert on the GPU (timed), then the format's own kernel.
  template <class Params, class Resolve, class Convert>
  kernel_figures run_format(const char* name, Resolve&& resolve, Convert&& convert) {
    kernel_figures f;
    f.kernel = name;
    try {
      const Params p = resolve(a_);
      f.params = describe_params(p);
      using device_fmt = decltype(convert(da_, p, ctx_));
      std::optional<device_fmt> m;
      f.convert_s = time_conversion(repeat_, [&] { return convert(da_, p, ctx_); }, m);
      f.bytes = device_bytes(*m);
      run_kernel(f, [&] { gpu::spmv(*m, 1.0, dx_.data(), 0.0, dy_.data(), ctx_); });
    } catch (const error& e) {
      f.refused = e.what();
    }
    return f;
  }

 private:
  void cusparse() { gpu::spmv_cusparse(da_, 1.0, dx_.data(), 0.0, dy_.data(), ctx_); }

  // Checked once (the warm-up call), then timed. y is poisoned first so that a kernel that
  // skips rows cannot pass on the previous kernel's result.
  template <class F>
  void run_kernel(kernel_figures& f, F&& spmv) {
    try {
      const std::vector<double> nan(dy_.size(), std::numeric_limits<double>::quiet_NaN());
      dy_.upload(nan.data(), nan.size());
      spmv();
      ctx_.synchronize();
      check(f);
      f.spmv_s = time_spmv(ctx_, loop_, repeat_, spmv);
    } catch (const error& e) {
      f.refused = e.what();
    }
  }

  void check(kernel_figures& f) {
    std::vector<double> y(dy_.size());
    dy_.download(y.data());
    f.error = max_rel_error(scale_, reference_, y);
    f.ok = f.error <= bound_;
  }

  gpu_context& ctx_;
  const host_csr& a_;
  int repeat_, loop_ = 0;
  device_csr da_;
  array<double, device> dx_, dy_;
  std::vector<double> scale_, reference_;
  double bound_ = 0;
};

matrix_figures bench_matrix(gpu_context& ctx, const fs::path& path, std::int64_t scale_to, int repeat, int loop) {
  read_options ro;
  ro.values = value_type::f64;
  const any_matrix m = read_matrix_file(path, ro).matrix;
  const auto* read = std::get_if<host_csr>(&m);
  if (!read) fail(errc::unsupported, "bench_gpu: the file was not read as double CSR with 32-bit indices");
  matrix_figures out;
  out.name = path.filename().string();
  std::optional<host_csr> scaled;
  if (scale_to > read->nnz() && read->nnz() > 0) {
    out.copies = (scale_to + read->nnz() - 1) / read->nnz();
    scaled.emplace(replicate(*read, out.copies));
  }
  const host_csr& a = scaled ? *scaled : *read;
  out.rows = a.rows;
  out.cols = a.cols;
  out.nnz = a.nnz();

  matrix_bench b(ctx, a, repeat, loop);
  out.loop = b.loop();
  out.kernels.push_back(b.run_cusparse());
  out.copy_rate = measure_copy_bandwidth(ctx, out.kernels.front().bytes);
  out.kernels.push_back(b.run_csr());
  out.kernels.push_back(b.run_format<cmrs_params>(
      "cmrs", [](const host_csr& h) { return cpu::resolve_cmrs_params(h, {}); },
      [](const device_csr& d, const cmrs_params& p, gpu_context& c) { return gpu::csr_to_cmrs(d, p, c); }));
  out.kernels.push_back(b.run_format<mbr_params>(
      "mbr", [](const host_csr& h) { return cpu::resolve_mbr_params(h, {}); },
      [](const device_csr& d, const mbr_params& p, gpu_context& c) { return gpu::csr_to_mbr(d, p, c); }));
  out.kernels.push_back(b.run_format<csr5_params>(
      "csr5", [](const host_csr& h) { return cpu::resolve_csr5_params(h, {}, csr5_target::gpu); },
      [](const device_csr& d, const csr5_params& p, gpu_context& c) { return gpu::csr_to_csr5(d, p, c); }));
  out.kernels.push_back(b.run_format<bcsr_params>(
      "bcsr", [](const host_csr& h) { return cpu::resolve_bcsr_params(h, {}); },
      [](const device_csr& d, const bcsr_params& p, gpu_context& c) { return gpu::csr_to_bcsr(d, p, c); }));
  out.kernels.push_back(b.run_format<hyb_params>(
      "hyb", [](const host_csr& h) { return cpu::resolve_hyb_params(h, {}); },
      [](const device_csr& d, const hyb_params& p, gpu_context& c) { return gpu::csr_to_hyb(d, p, c); }));
  out.kernels.push_back(b.run_format<ccoo_params>(
      "ccoo", [](const host_csr& h) { return cpu::resolve_ccoo_params(h, {}); },
      [](const device_csr& d, const ccoo_params& p, gpu_context& c) { return gpu::csr_to_ccoo(d, p, c); }));
  return out;
}

// The bytes an SpMV with beta = 0 moves at least: the matrix, x read once, y written once.
double traffic(const matrix_figures& m, const kernel_figures& k) {
  return static_cast<double>(k.bytes) + 8.0 * static_cast<double>(m.cols + m.rows);
}

void print_matrix(const matrix_figures& m) {
  std::printf("\n%s%s: %lld x %lld, %lld entries; copy %.0f GB/s; %d SpMVs per batch\n", m.name.c_str(),
              m.copies > 1 ? (" x" + std::to_string(m.copies)).c_str() : "", static_cast<long long>(m.rows),
              static_cast<long long>(m.cols), static_cast<long long>(m.nnz), m.copy_rate / 1e9, m.loop);
  std::printf("  %-9s %-40s %10s %8s %8s %7s %9s %11s %9s\n", "kernel", "params", "time us", "speedup", "GB/s",
              "% copy", "MB", "conv/SpMV", "rel err");
  const double base = m.kernels.front().spmv_s;
  for (const auto& k : m.kernels) {
    if (!k.refused.empty()) {
      std::printf("  %-9s %-40s refused: %s\n", k.kernel.c_str(), k.params.c_str(), k.refused.c_str());
      continue;
    }
    const double rate = traffic(m, k) / k.spmv_s;
    std::printf("  %-9s %-40s %10.2f %7.2f%c %8.1f %6.1f%% %9.2f", k.kernel.c_str(), k.params.c_str(), k.spmv_s * 1e6,
                base / k.spmv_s, k.ok ? ' ' : '!', rate / 1e9, 100 * rate / m.copy_rate,
                static_cast<double>(k.bytes) / 1e6);
    if (k.convert_s >= 0) std::printf(" %11.2f", k.convert_s / base);
    else std::printf(" %11s", "-");
    std::printf(" %9.1e\n", k.error);
  }
}

// Geometric means per kernel over the matrices where it ran and passed the check.
void print_means(const std::vector<matrix_figures>& all) {
  if (all.empty()) return;
  std::printf("\ngeometric means over the matrices where the kernel ran and matched cuSPARSE:\n");
  std::printf("  %-9s %5s %8s %7s %11s\n", "kernel", "n", "speedup", "% copy", "conv/SpMV");
  for (std::size_t k = 0; k < all.front().kernels.size(); ++k) {
    double speedup = 0, share = 0, conv = 0;
    int n = 0, nconv = 0;
    for (const auto& m : all) {
      const auto& f = m.kernels[k];
      if (!f.refused.empty() || !f.ok) continue;
      speedup += std::log(m.kernels.front().spmv_s / f.spmv_s);
      share += std::log(traffic(m, f) / f.spmv_s / m.copy_rate);
      if (f.convert_s > 0) {
        conv += std::log(f.convert_s / m.kernels.front().spmv_s);
        ++nconv;
      }
      ++n;
    }
    std::printf("  %-9s %5d", all.front().kernels[k].kernel.c_str(), n);
    if (n) std::printf(" %8.2f %6.1f%%", std::exp(speedup / n), 100 * std::exp(share / n));
    else std::printf(" %8s %7s", "-", "-");
    if (nconv) std::printf(" %11.2f\n", std::exp(conv / nconv));
    else std::printf(" %11s\n", "-");
  }
}

std::string driver_description() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::string s = "CUDA driver API " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) +
                  ", runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  // The kernel module's version line names the driver release: "NVRM version: NVIDIA UNIX
  // [Open] Kernel Module [for x86_64]  580.65.06  ...", the first word after "Kernel Module"
  // that starts with a digit.
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    const auto k = line.find("Kernel Module");
    if (k != std::string::npos) {
      std::istringstream words(line.substr(k + 13));
      std::string w;
      while (words >> w)
        if (std::isdigit(static_cast<unsigned char>(w[0]))) {
          s += ", driver " + w;
          break;
        }
    }
  }
  return s;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_gpu [INPUT...] [--shared DIR] [--repeat R] [--loop N] [--scale-to NNZ]\n"
               "  INPUT: .mtx files or directories of them (default: DIR/matrices/real; DIR: --shared,\n"
               "         SPCONV_SHARED_DIR or the shared folder beside the sources)\n"
               "  --repeat R: batches per kernel, the median is reported (default 10)\n"
               "  --loop N: SpMVs per batch (default: about 10 ms of cuSPARSE, 10 to 5000)\n"
               "  --scale-to NNZ: replicate each matrix along the diagonal to at least NNZ entries\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // The shared folder sits beside the repository: this file is tests/bench/ in it.
  fs::path shared = fs::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared";
  if (const char* env = std::getenv("SPCONV_SHARED_DIR"); env && *env) shared = env;
  std::vector<fs::path> args;
  int repeat = 10, loop = 0;
  std::int64_t scale_to = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (s == "--loop" && i + 1 < argc) loop = std::max(1, std::atoi(argv[++i]));
    else if (s == "--scale-to" && i + 1 < argc) scale_to = std::max<long long>(0, std::atoll(argv[++i]));
    else if (s == "--shared" && i + 1 < argc) shared = argv[++i];
    else if (!s.empty() && s[0] != '-') args.push_back(s);
    else return usage();
  }
  if (args.empty()) args.push_back(shared / "matrices" / "real");

  std::vector<fs::path> files;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(a))
        if (e.path().extension() == ".mtx") in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::exists(a)) {
      files.push_back(a);
    } else {
      std::fprintf(stderr, "bench_gpu: %s does not exist\n", a.c_str());
      return 2;
    }
  }
  if (!gpu_available()) {
    std::fprintf(stderr, "bench_gpu: no GPU visible to the CUDA runtime\n");
    return 3;
  }

  try {
    gpu_context ctx;
    const device_memory mem = device_memory_info();
    std::printf("bench_gpu: %s (%.0f GiB), %s\n", device_name(ctx.device()).c_str(),
                static_cast<double>(mem.total) / (1u << 30), driver_description().c_str());
    std::printf("double, alpha 1, beta 0; time per SpMV = median of %d batches after a warm-up batch%s\n", repeat,
                scale_to > 0 ? (", matrices replicated to >= " + std::to_string(scale_to) + " entries").c_str() : "");
    std::printf("GB/s over the format's bytes + 8*(rows+cols); %% copy: of the D2D copy rate (read+write) for a\n"
                "buffer the size of the CSR arrays; conv/SpMV: GPU CSR -> X in cuSPARSE SpMV times;\n"
                "'!': result beyond the bound against cuSPARSE (rel err per row, scale sum |a_ij x_j|)\n");
    std::vector<matrix_figures> all;
    for (const auto& f : files) {
      try {
        all.push_back(bench_matrix(ctx, f, scale_to, repeat, loop));
        print_matrix(all.back());
        std::fflush(stdout);
      } catch (const error& e) {
        std::printf("\nskipped %s: %s\n", f.filename().c_str(), e.what());
      }
    }
    print_means(all);
  } catch (const error& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}

#endif  // SPCONV_HAVE_CUDA
