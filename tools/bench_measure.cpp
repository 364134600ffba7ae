#include "tools/bench_measure.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "convert/graph.hpp"
#include "formats/parallel.hpp"
#include "io/generate.hpp"
#include "io/hdf5/container.hpp"
#include "io/matrix_file.hpp"
#include "kernels/cpu/spmv.hpp"
#include "kernels/cpu/spmv_csr.hpp"

#ifdef SPCONV_HAVE_CUDA
#include <cuda_runtime.h>

#include "convert/gpu/graph.hpp"
#include "formats/any_device_matrix.hpp"
#include "formats/device.hpp"
#include "io/generate_gpu.hpp"
#include "io/hdf5/device_load.hpp"
#include "kernels/gpu/spmv.hpp"
#include "kernels/gpu/spmv_any.hpp"
#endif

namespace spconv::bench {
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

timing summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  return {n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, t.front()};
}

// `repeat` timed calls of f, after one untimed call when `warm_up` (first-touch page faults,
// caches, clocks and the thread start-up settle). A result f returns is destroyed after the
// clock stops: freeing memory is not part of what is measured.
template <class F>
timing sample(int repeat, bool warm_up, F&& f) {
  if (warm_up) f();
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = clock_type::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      t.push_back(seconds_since(t0));
    } else {
      const auto result = f();
      t.push_back(seconds_since(t0));
    }
  }
  return summarize(t);
}

template <class P>
std::string params_text(const P& p) {
  std::string s;
  P::for_each_param(p, [&](std::string_view name, const auto& v) {
    if (!s.empty()) s += ' ';
    s.append(name);
    s += '=';
    s += std::to_string(static_cast<long long>(v));
  });
  return s;
}

std::string host_params(const any_matrix& m) {
  return std::visit([](const auto& x) { return params_text(x.params); }, m);
}

// The CPU's counterpart of the GPU's copy bandwidth: a parallel copy (parallel_for, as the
// SpMV kernels use) of a buffer as large as the CSR arrays, counting the bytes read and the
// bytes written, the median of `repeat` copies after a warm-up one. A buffer that fits the
// caches gives the cache's rate, as the SpMV of a matrix that fits them sees.
double probe_memory_bandwidth(std::size_t bytes, int repeat) {
  bytes = std::max<std::size_t>(bytes, 64);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  const timing t = sample(repeat, true, [&] {
    parallel_for(static_cast<std::int64_t>(bytes), std::int64_t{1} << 16, [&](std::int64_t lo, std::int64_t hi) {
      std::memcpy(dst.data() + lo, src.data() + lo, static_cast<std::size_t>(hi - lo));
    });
  });
  // The copies must not be optimised away: their result is read.
  volatile char sink = dst[bytes / 2];
  (void)sink;
  return 2.0 * static_cast<double>(bytes) / t.median;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos && colon + 1 < line.size()) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

}  // namespace

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return in ? a + " " + b + " " + c : "unknown";
}

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Container sizes and load times per distinct stored format (format and parameters): the
// CPU and GPU variants of a format share them unless their parameters differ (CSR5). The
// containers live in a scratch directory removed when the meter goes; each is deleted once
// measured. Loads read a file just written, so from the page cache: the figures are the
// decoding and copying cost, not the disk's.
struct stored {
  std::uint64_t zstd_bytes = 0, raw_bytes = 0;
  timing load_host;
  std::optional<timing> load_device;
};

class storage_meter {
 public:
  using device_loader = std::function<timing(const fs::path&, const std::string&)>;

  storage_meter(const fs::path& tmp, int io_repeat, device_loader device_load)
      : io_repeat_(io_repeat), device_load_(std::move(device_load)) {
    static std::atomic<int> counter{0};
    dir_ = (tmp.empty() ? fs::temp_directory_path() : tmp) /
           ("spconv-bench-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) fail(errc::io, dir_.string() + ": cannot create the scratch directory: " + ec.message());
  }
  ~storage_meter() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  storage_meter(const storage_meter&) = delete;
  storage_meter& operator=(const storage_meter&) = delete;

  // The writer takes a list of formats: a matrix the caller no longer needs is moved into it
  // rather than copied (it may be gigabytes).
  const stored& measure(const any_matrix& m) {
    if (const stored* s = find(m)) return *s;
    return store(std::vector<any_matrix>{m});
  }
  const stored& measure(any_matrix&& m) {
    if (const stored* s = find(m)) return *s;
    std::vector<any_matrix> one;
    one.push_back(std::move(m));
    return store(one);
  }

 private:
  static std::string key_of(const any_matrix& m) { return std::string(format_name(m)) + " " + host_params(m); }

  const stored* find(const any_matrix& m) const {
    const auto it = cache_.find(key_of(m));
    return it == cache_.end() ? nullptr : &it->second;
  }

  const stored& store(const std::vector<any_matrix>& one) {
    const any_matrix& m = one.front();
    const std::string name(format_name(m));
    stored s;
    const fs::path zstd_file = dir_ / (name + ".zstd.h5"), raw_file = dir_ / (name + ".raw.h5");
    write_options wo;
    wo.force = true;
    write_container(zstd_file, one, {}, wo);
    s.zstd_bytes = fs::file_size(zstd_file);
    wo.comp.zstd = false;
    write_container(raw_file, one, {}, wo);
    s.raw_bytes = fs::file_size(raw_file);
    fs::remove(raw_file);
    s.load_host = sample(io_repeat_, true, [&] { return read_container(zstd_file, name); });
    if (device_load_) s.load_device = device_load_(zstd_file, name);
    fs::remove(zstd_file);
    return cache_.emplace(key_of(m), s).first->second;
  }

  int io_repeat_;
  device_loader device_load_;
  fs::path dir_;
  std::map<std::string, stored> cache_;
};

void record_storage(format_figures& f, const stored& s, bool device) {
  f.container_zstd_bytes = s.zstd_bytes;
  f.container_raw_bytes = s.raw_bytes;
  f.load_host = s.load_host;
  if (device) f.load_device = s.load_device;
}

// What both devices need of the matrix: the host CSR (typed and as any_matrix), x, and the
// longest row (the error bound grows with it).
template <class V>
struct problem {
  const any_matrix& m;
  const csr<V, std::int32_t>& a;
  std::vector<V> x;
  std::int64_t max_row = 0;

  problem(const any_matrix& any, const csr<V, std::int32_t>& typed) : m(any), a(typed) {
    x.resize(static_cast<std::size_t>(a.cols));
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = V(1) + static_cast<V>(j % 17) / V(16);
    for (std::int64_t r = 0; r < a.rows; ++r) max_row = std::max<std::int64_t>(max_row, a.row_ptr[r + 1] - a.row_ptr[r]);
  }
};

template <class V>
device_figures measure_cpu(const problem<V>& p, const settings& s, storage_meter* store,
                           const std::function<void(const std::string&)>& progress) {
  const auto& a = p.a;
  device_figures d;
  d.device = device_kind::cpu;
  d.baseline = "csr-reference";
  const auto rows = static_cast<std::size_t>(a.rows);
  array<V> y(rows);
  const std::vector<V> y0(rows, V(0));
  progress("cpu baseline");
  d.baseline_spmv = sample(s.repeat, true, [&] { cpu::spmv(a, V(1), p.x.data(), V(0), y.data()); });
  d.bandwidth = probe_memory_bandwidth(bytes(a), s.repeat);
  convert_options opt = s.options;
  opt.csr5_for = csr5_target::cpu;  // the SpMV timed here is the CPU's: CSR5's CPU tile rule
  for (const auto& name : s.formats) {
    progress("cpu " + name);
    format_figures f;
    f.format = name;
    std::optional<any_matrix> converted;
    try {
      if (name != "csr") {
        converted.emplace(convert(p.m, name, opt));  // the warm-up run, kept for the SpMV
        f.to_format = sample(s.repeat, false, [&] { return convert(p.m, name, opt); });
        f.to_csr = sample(s.repeat, true, [&] { return convert(*converted, "csr"); });
      }
      const any_matrix& xm = converted ? *converted : p.m;
      f.params = host_params(xm);
      f.bytes = bytes(xm);
      f.spmv_bytes = spmv_bytes(xm);
      // Checked once on a poisoned y (a kernel that skips rows cannot pass on an earlier
      // result), then timed.
      std::fill(y.begin(), y.end(), std::numeric_limits<V>::quiet_NaN());
      cpu::spmv<V>(xm, V(1), p.x.data(), V(0), y.data());
      f.max_rel_error = cpu::spmv_max_rel_error(a, V(1), p.x.data(), V(0), y0.data(), y.data());
      f.error_bound = cpu::spmv_tolerance<V>(p.max_row);
      if (!(f.max_rel_error <= f.error_bound)) f.status = "wrong";
      f.spmv = sample(s.repeat, false, [&] { cpu::spmv<V>(xm, V(1), p.x.data(), V(0), y.data()); });
    } catch (const error& e) {
      f.status = "refused";
      f.message = e.what();
    }
    if (store && f.status != "refused") {
      progress("cpu " + name + " storage");
      record_storage(f, converted ? store->measure(std::move(*converted)) : store->measure(p.m), false);
    }
    d.formats.push_back(std::move(f));
  }
  return d;
}

#ifdef SPCONV_HAVE_CUDA

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

std::string device_params(const any_device_matrix& m) {
  return std::visit([](const auto& x) { return params_text(x.params); }, m);
}

// Seconds per call of `spmv`: `repeat` batches of `batch` calls after a warm-up batch. The
// calls only queue work on ctx's stream, so a batch is timed on the host from an idle stream
// to the stream drained again (ctx.synchronize() on both sides) and divided by its size;
// over a batch of about 10 ms this equals CUDA-event timing of the same work to well within
// a percent, without a device-side timer in the library.
template <class F>
timing batches(gpu_context& ctx, int batch, int repeat, F&& spmv) {
  auto one = [&] {
    ctx.synchronize();
    const auto t0 = clock_type::now();
    for (int i = 0; i < batch; ++i) spmv();
    ctx.synchronize();
    return seconds_since(t0) / batch;
  };
  one();
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) t.push_back(one());
  return summarize(t);
}

#endif  // SPCONV_HAVE_CUDA

}  // namespace

#ifdef SPCONV_HAVE_CUDA

struct runner::gpu_state {
  gpu_context ctx;

  timing load(const fs::path& file, const std::string& name, int io_repeat) {
    return sample(io_repeat, true, [&] { return load_container_to_device(file, name, ctx); });
  }

  template <class V>
  device_figures measure(const problem<V>& p, const settings& s, storage_meter* store,
                         const std::function<void(const std::string&)>& progress) {
    const auto& a = p.a;
    device_figures d;
    d.device = device_kind::gpu;
    d.baseline = "cusparse";
    progress("gpu upload");
    any_device_matrix da = to_device(p.m);
    // Part of the Matrix Market path that the storage figures compare containers with.
    if (s.storage) d.csr_upload = sample(s.io_repeat, false, [&] { return to_device(p.m); });
    array<V, device> dx, dy;
    dx.upload(p.x.data(), p.x.size());
    dy.resize(static_cast<std::size_t>(a.rows));

    // cuSPARSE's y is the reference: a row may differ from it by twice the CPU reference's
    // bound (both err from the exact product, in either direction), in units of
    // sum_j |a_ij x_j| (the scale of cpu::spmv_max_rel_error).
    std::vector<double> scale(static_cast<std::size_t>(a.rows), 0.0);
    parallel_for(a.rows, 1 << 12, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t r = lo; r < hi; ++r)
        for (std::int32_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
          scale[static_cast<std::size_t>(r)] +=
              std::abs(static_cast<double>(a.values[k]) * static_cast<double>(p.x[static_cast<std::size_t>(a.col_idx[k])]));
    });
    const double bound = 2 * cpu::spmv_tolerance<V>(p.max_row);
    // The baseline as a solver runs it: cuSPARSE's descriptors and work buffer made once,
    // outside the timing, each call only queueing cusparseSpMV (as our kernels do no set-up).
    gpu::cusparse_spmv<V, std::int32_t> baseline(std::get<csr<V, std::int32_t, device>>(da), dx.data(), dy.data(), ctx);
    auto cusparse = [&] { baseline(V(1), V(0)); };
    cusparse();
    ctx.synchronize();
    std::vector<V> reference(dy.size()), y(dy.size());
    dy.download(reference.data());
    auto max_rel_error = [&] {
      dy.download(y.data());
      double worst = 0;
      for (std::size_t r = 0; r < y.size(); ++r) {
        const double diff = std::abs(static_cast<double>(y[r]) - static_cast<double>(reference[r]));
        double e = scale[r] > 0 ? diff / scale[r] : (diff == 0 ? 0.0 : std::numeric_limits<double>::infinity());
        if (std::isnan(e)) e = std::numeric_limits<double>::infinity();
        worst = std::max(worst, e);
      }
      return worst;
    };

    progress("gpu baseline");
    // A batch lasts about 10 ms of cuSPARSE time: long against a launch and the two
    // synchronisations, short enough for a suite of matrices.
    d.batch = s.batch;
    if (d.batch <= 0) {
      const double once = batches(ctx, 10, 1, cusparse).median;
      d.batch = static_cast<int>(std::clamp(std::ceil(0.01 / std::max(once, 1e-9)), 10.0, 5000.0));
    }
    d.baseline_spmv = batches(ctx, d.batch, s.repeat, cusparse);
    d.bandwidth = measure_copy_bandwidth(ctx, device_bytes(da));

    convert_options base = s.options;
    base.csr5_for = csr5_target::gpu;
    const std::vector<V> nan(dy.size(), std::numeric_limits<V>::quiet_NaN());
    // One row per format, each with gpu::spmv's default kernel (CSR: HOLA-SpMV, csr_method in
    // kernels/gpu/spmv.hpp); CSR also gets a row for our row kernel on the same arrays,
    // "csr:rows".
    auto measure_format = [&](const std::string& name, gpu::csr_method method) {
      progress("gpu " + name);
      format_figures f;
      f.format = name;
      const std::string target = name.substr(0, name.find(':'));
      std::optional<any_device_matrix> converted;
      try {
        if (target != "csr") {
          // The automatic parameters are resolved on the host beforehand (untimed), so the
          // timed conversion is the device's work alone.
          const convert_options opt = resolve_params(p.m, target, base);
          converted.emplace(gpu::convert(da, target, opt, ctx));
          f.to_format = sample(s.repeat, false, [&] { return gpu::convert(da, target, opt, ctx); });
          f.to_csr = sample(s.repeat, true, [&] { return gpu::convert(*converted, "csr", opt, ctx); });
        }
        const any_device_matrix& dm = converted ? *converted : da;
        // CSR's kernel has no stored parameter; which kernel ran is shown instead.
        f.params = target != "csr"                   ? device_params(dm)
                   : method == gpu::csr_method::hola ? "kernel=hola"
                                                     : "lanes=" + std::to_string(gpu::csr_vector_lanes(a.rows, a.nnz()));
        f.bytes = device_bytes(dm);
        f.spmv_bytes = spmv_bytes(dm);
        auto run = [&] { gpu::spmv<V>(dm, V(1), dx.data(), V(0), dy.data(), ctx, method); };
        dy.upload(nan.data(), nan.size());
        run();
        ctx.synchronize();
        f.max_rel_error = max_rel_error();
        f.error_bound = bound;
        if (!(f.max_rel_error <= f.error_bound)) f.status = "wrong";
        f.spmv = batches(ctx, d.batch, s.repeat, run);
      } catch (const error& e) {
        f.status = "refused";
        f.message = e.what();
      }
      if (store && f.status != "refused" && method == gpu::csr_method::hola) {
        progress("gpu " + name + " storage");
        record_storage(f, converted ? store->measure(to_host(*converted)) : store->measure(p.m), true);
      }
      d.formats.push_back(std::move(f));
    };
    for (const auto& name : s.formats) {
      measure_format(name, gpu::csr_method::hola);
      if (name == "csr") measure_format("csr:rows", gpu::csr_method::rows);
    }
    return d;
  }
};

#else

struct runner::gpu_state {};

#endif  // SPCONV_HAVE_CUDA

runner::runner(settings s) : s_(std::move(s)) {
  if (!s_.gpu) return;
#ifdef SPCONV_HAVE_CUDA
  if (!gpu_available()) fail(errc::device, "bench --device gpu: no GPU is visible to the CUDA runtime");
  gpu_ = std::make_unique<gpu_state>();
#else
  fail(errc::device, "bench --device gpu: this spconv was built without CUDA (CPU only)");
#endif
}

runner::~runner() = default;

void runner::progress(const std::string& what) const {
  if (s_.progress) s_.progress(what);
}

matrix_figures runner::measure(const fs::path& file) {
  matrix_figures out;
  out.path = file.string();
  out.values = s_.values;
  progress("reading");
  const bool is_mtx = detect_file_kind(file) != file_kind::hdf5;
  read_options ro;
  ro.values = s_.values;
  // Every format but CSR and COO has 32-bit indices: the matrix is measured as 32-bit CSR
  // (errc::unsupported, and the file skipped, when it does not fit).
  convert_options to_csr32;
  to_csr32.values = s_.values;
  to_csr32.index = index_type::i32;
  auto replicate = [&](any_matrix& m) {
    m = std::visit(
        [&](const auto& x) -> any_matrix {
          using M = std::remove_cvref_t<decltype(x)>;
          if constexpr (std::is_same_v<M, csr<typename M::value_type, std::int32_t>>)
            return replicate_diagonal(x, out.copies);
          else
            fail(errc::bad_input, "bench: internal: the matrix was not converted to 32-bit CSR");
        },
        m);
  };
  auto load = [&] {
    any_matrix m = read_matrix_file(file, ro).matrix;
    if (format_name(m) != "csr" || index_type_of(m) != index_type::i32 || value_type_of(m) != s_.values)
      m = convert(m, "csr", to_csr32);
    if (out.copies > 1) replicate(m);
    return m;
  };
  any_matrix m = load();
  const std::int64_t nnz = std::visit([](const auto& x) { return x.nnz(); }, m);
  out.name = file.filename().string();
  if (s_.scale_to > nnz && nnz > 0) {
    out.copies = (s_.scale_to + nnz - 1) / nnz;
    replicate(m);
    out.name += " x" + std::to_string(out.copies);
  }
  // Matrix Market input: what loading it costs without a container (the first read above
  // was the warm-up). Containers are measured per format below.
  if (is_mtx && s_.storage) {
    progress("parsing");
    out.mtx_parse = sample(s_.io_repeat, false, load);
  }

  return measure_matrix(m, std::move(out));
}

matrix_figures runner::measure_generated(const std::string& spec) {
  std::vector<std::string> parts;
  for (std::size_t b = 0;;) {
    const std::size_t e = spec.find(':', b);
    parts.push_back(spec.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  std::vector<std::int64_t> params;
  for (std::size_t k = 1; k < parts.size(); ++k) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(parts[k].data(), parts[k].data() + parts[k].size(), v);
    if (ec != std::errc{} || end != parts[k].data() + parts[k].size() || parts[k].empty())
      fail(errc::usage, "--generate " + spec + ": parameter '" + parts[k] + "' is not an integer (KIND:P1:P2...)");
    params.push_back(v);
  }
  constexpr std::uint64_t seed = 1;
  matrix_figures out;
  out.path = spec;
  out.values = s_.values;
  any_matrix m;
  bool on_device = false;
#ifdef SPCONV_HAVE_CUDA
  if (gpu_ && parts[0] == "stencil27" && params.size() == 1) {
    progress("generating on the gpu");
    if (s_.values == value_type::f32) m = to_host(gen::gpu::stencil27<float>(params[0], seed, gpu_->ctx));
    else m = to_host(gen::gpu::stencil27<double>(params[0], seed, gpu_->ctx));
    on_device = true;
  }
#endif
  if (!on_device) {
    progress("generating");
    m = gen::generate(parts[0], params, s_.values, seed);
  }
  out.name = gen::describe(parts[0], params, seed) + (on_device ? " (generated on the GPU)" : "");
  return measure_matrix(m, std::move(out));
}

matrix_figures runner::measure_matrix(any_matrix& m, matrix_figures out) {
  auto run = [&](const auto& a) {
    using V = typename std::remove_cvref_t<decltype(a)>::value_type;
    const problem<V> p(m, a);
    out.rows = a.rows;
    out.cols = a.cols;
    out.nnz = a.nnz();
    out.csr_bytes = bytes(a);
    std::optional<storage_meter> store;
    if (s_.storage) {
      storage_meter::device_loader device_load;
#ifdef SPCONV_HAVE_CUDA
      if (gpu_)
        device_load = [this](const fs::path& f, const std::string& name) { return gpu_->load(f, name, s_.io_repeat); };
#endif
      store.emplace(s_.tmp_dir, s_.io_repeat, std::move(device_load));
    }
    storage_meter* st = store ? &*store : nullptr;
    const auto note = [this](const std::string& what) { progress(what); };
    if (s_.cpu) out.devices.push_back(measure_cpu<V>(p, s_, st, note));
#ifdef SPCONV_HAVE_CUDA
    if (gpu_) out.devices.push_back(gpu_->measure<V>(p, s_, st, note));
#endif
  };
  if (const auto* a = std::get_if<csr<float, std::int32_t>>(&m)) run(*a);
  else run(std::get<csr<double, std::int32_t>>(m));
  return out;
}

machine_info describe_machine([[maybe_unused]] bool with_gpu) {
  machine_info mi;
  mi.cpu = cpu_model();
  mi.threads = thread_count();
  mi.date = utc_now();
  mi.version = SPCONV_VERSION;
  mi.loadavg = load_average();
#ifdef SPCONV_HAVE_CUDA
  if (with_gpu) {
    mi.gpu = device_name(0);
    mi.driver = driver_description();
    mi.gpu_memory = device_memory_info().total;
  }
#endif
  return mi;
}

}  // namespace spconv::bench
