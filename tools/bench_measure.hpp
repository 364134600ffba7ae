// What `spconv bench` measures, per matrix, per format, per device (CPU, GPU): conversion
// times both ways, SpMV time against the device's baseline (the CSR reference on the CPU,
// cuSPARSE on the GPU) and against its memory bandwidth measured in the same run, the
// result checked once, the format's size in memory and in containers, and the load time
// from a container next to parse-and-convert from Matrix Market. Raw figures only: the
// derived ones (GFLOP/s, speedup, break-even, ...) are computed by tools/bench_report.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/graph.hpp"
#include "formats/any_matrix.hpp"
#include "formats/types.hpp"

namespace spconv::bench {

// Seconds: the median and the minimum of the samples (after a warm-up that is not kept).
// The tables use the median; the minimum shows what a quiet machine would give.
struct timing {
  double median = 0, min = 0;
};

enum class device_kind { cpu, gpu };
inline const char* device_name_of(device_kind d) { return d == device_kind::cpu ? "cpu" : "gpu"; }

struct settings {
  std::vector<std::string> formats;  // names from format_list
  bool cpu = true, gpu = false;
  value_type values = value_type::f64;
  int repeat = 10;              // samples of every SpMV and conversion timing
  int io_repeat = 3;            // samples of every file load
  int batch = 0;                // GPU: SpMVs per timed batch (0: about 10 ms of cuSPARSE, 10 to 5000)
  std::int64_t scale_to = 0;    // replicate each matrix along the diagonal to at least this many entries
  bool storage = true;          // container sizes and load times
  std::filesystem::path tmp_dir;  // where the containers measured are written (and removed)
  convert_options options;        // format parameters for every matrix (0: automatic); csr5_for is
                                  // set per device measured
  std::function<void(const std::string&)> progress;  // told what is measured next (may be empty)
};

// One format on one device.
struct format_figures {
  std::string format;
  std::string status = "ok";  // ok; wrong (SpMV result beyond the bound); refused (message says why)
  std::string message;
  std::string params;  // the format's parameters as stored ("r=4 c=4"), "" for none
  std::optional<timing> to_format, to_csr;  // CSR -> X, X -> CSR (none for csr itself)
  timing spmv;                              // seconds per SpMV
  double max_rel_error = 0, error_bound = 0;
  std::uint64_t bytes = 0;       // the format's arrays (device memory on the GPU)
  std::uint64_t spmv_bytes = 0;  // those of them an SpMV reads (spmv_bytes, formats/format.hpp)
  // Storage of this format as converted for this device (CSR5's automatic tile depends on it).
  std::optional<std::uint64_t> container_zstd_bytes, container_raw_bytes;
  std::optional<timing> load_host;    // zstd container -> host (read_container)
  std::optional<timing> load_device;  // zstd container -> device (read_container + to_device), GPU only
};

struct device_figures {
  device_kind device = device_kind::cpu;
  std::string baseline;    // "csr-reference" or "cusparse"
  timing baseline_spmv;    // seconds per SpMV
  double bandwidth = 0;    // bytes per second, read + write, of the copy probe
  int batch = 1;           // SpMVs per timed sample
  std::optional<timing> csr_upload;  // GPU: host CSR -> device (part of the Matrix Market path)
  std::vector<format_figures> formats;
};

struct matrix_figures {
  std::string name;  // file name, with " x K" when replicated
  std::string path;
  std::int64_t rows = 0, cols = 0, nnz = 0, copies = 1;
  value_type values = value_type::f64;
  std::uint64_t csr_bytes = 0;
  std::optional<timing> mtx_parse;  // Matrix Market input: read_matrix_file (+ the replication)
  std::vector<device_figures> devices;
};

struct machine_info {
  std::string cpu, gpu, driver, date, version;
  std::string loadavg, loadavg_after;  // /proc/loadavg before and after the measurements
  int threads = 0;
  std::uint64_t gpu_memory = 0;
};
machine_info describe_machine(bool with_gpu);
std::string load_average();  // the 1, 5 and 15 minute load averages of /proc/loadavg

// Measures matrix after matrix with one GPU context (when settings.gpu).
class runner {
 public:
  explicit runner(settings s);  // errc::device when the GPU is asked for and cannot be used
  ~runner();
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  // Reads `file` (.mtx, .mtx.gz or .h5; value type from the settings) and measures it.
  // Errors reading it propagate (the caller skips the file); a format that cannot represent
  // the matrix or fails on the device is recorded as refused.
  matrix_figures measure(const std::filesystem::path& file);

  // Generates `spec`, "KIND:P1:P2:..." with the kinds and parameters of `spconv gen` (seed 1),
  // and measures it. stencil27 is generated on the device when the GPU is measured
  // (gen::gpu::stencil27: the host generator's bits, without building it on the host), every
  // other kind on the host. Not replicated (--scale-to applies to files); no Matrix Market
  // parse to compare with. errc::usage for a malformed spec or an unknown kind.
  matrix_figures measure_generated(const std::string& spec);

 private:
  matrix_figures measure_matrix(any_matrix& m, matrix_figures out);
  void progress(const std::string& what) const;  // settings::progress, when set
  struct gpu_state;
  settings s_;
  std::unique_ptr<gpu_state> gpu_;
};

}  // namespace spconv::bench
