#include "tools/bench_report.hpp"

#include <algorithm>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "formats/any_matrix.hpp"

namespace spconv::bench {
namespace {

using json = nlohmann::ordered_json;

// JSON has no NaN or infinity: such a figure is null.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::size_t value_bytes(value_type v) { return v == value_type::f32 ? 4 : 8; }

// The one record of (matrix, device, format): the raw figures and every derived one, null
// where a figure does not apply (a refused format, the conversion of csr itself, the device
// load on the CPU, the Matrix Market path of a container input).
json record(const matrix_figures& m, const device_figures& d, const format_figures& f) {
  const bool ran = f.status != "refused";
  const double base = d.baseline_spmv.median, t = f.spmv.median;
  const double nnz = static_cast<double>(m.nnz);
  // The bytes an SpMV with beta = 0 moves at least: the format's arrays that it reads, x read
  // once, y written once.
  const double traffic = static_cast<double>(f.spmv_bytes) +
                         static_cast<double>(value_bytes(m.values)) * static_cast<double>(m.rows + m.cols);
  const double conversion = f.to_format ? f.to_format->median : 0.0;
  json r;
  r["matrix"] = m.name;
  r["path"] = m.path;
  r["device"] = device_name_of(d.device);
  r["format"] = f.format;
  r["value_type"] = to_string(m.values);
  r["rows"] = m.rows;
  r["cols"] = m.cols;
  r["nnz"] = m.nnz;
  r["copies"] = m.copies;
  r["status"] = f.status;
  r["message"] = f.message;
  r["params"] = f.params;
  r["spmv_median_s"] = ran ? num(t) : json(nullptr);
  r["spmv_min_s"] = ran ? num(f.spmv.min) : json(nullptr);
  r["batch"] = d.batch;
  r["gflops"] = ran ? num(2.0 * nnz / t / 1e9) : json(nullptr);
  r["effective_gbps"] = ran ? num(traffic / t / 1e9) : json(nullptr);
  r["bandwidth_gbps"] = num(d.bandwidth / 1e9);
  r["bandwidth_pct"] = ran ? num(100.0 * traffic / t / d.bandwidth) : json(nullptr);
  r["baseline"] = d.baseline;
  r["baseline_spmv_median_s"] = num(base);
  r["baseline_spmv_min_s"] = num(d.baseline_spmv.min);
  r["speedup"] = ran ? num(base / t) : json(nullptr);
  r["to_format_median_s"] = f.to_format ? num(f.to_format->median) : json(nullptr);
  r["to_format_min_s"] = f.to_format ? num(f.to_format->min) : json(nullptr);
  r["to_csr_median_s"] = f.to_csr ? num(f.to_csr->median) : json(nullptr);
  r["to_csr_min_s"] = f.to_csr ? num(f.to_csr->min) : json(nullptr);
  r["conversion_spmvs"] = f.to_format ? num(f.to_format->median / base) : json(nullptr);
  r["to_csr_spmvs"] = f.to_csr ? num(f.to_csr->median / base) : json(nullptr);
  // After how many SpMVs the conversion has paid for itself: it saves base - t per SpMV.
  // csr itself costs no conversion (0 when its kernel is the faster one).
  if (f.status != "ok") r["break_even"] = nullptr;
  else if (t < base) r["break_even"] = static_cast<std::int64_t>(std::ceil(conversion / (base - t)));
  else r["break_even"] = "never";
  r["max_rel_error"] = ran ? num(f.max_rel_error) : json(nullptr);
  r["error_bound"] = ran ? num(f.error_bound) : json(nullptr);
  r["bytes"] = ran ? json(f.bytes) : json(nullptr);
  r["spmv_bytes"] = ran ? json(f.spmv_bytes) : json(nullptr);
  r["bytes_per_nnz"] = ran && m.nnz > 0 ? num(static_cast<double>(f.bytes) / nnz) : json(nullptr);
  r["footprint_vs_csr"] = ran && m.csr_bytes > 0 ? num(static_cast<double>(f.bytes) / static_cast<double>(m.csr_bytes)) : json(nullptr);
  r["container_zstd_bytes"] = opt(f.container_zstd_bytes);
  r["container_raw_bytes"] = opt(f.container_raw_bytes);
  r["load_host_median_s"] = f.load_host ? num(f.load_host->median) : json(nullptr);
  r["load_host_min_s"] = f.load_host ? num(f.load_host->min) : json(nullptr);
  r["load_device_median_s"] = f.load_device ? num(f.load_device->median) : json(nullptr);
  r["load_device_min_s"] = f.load_device ? num(f.load_device->min) : json(nullptr);
  r["mtx_parse_median_s"] = m.mtx_parse ? num(m.mtx_parse->median) : json(nullptr);
  // Without a container: parse the Matrix Market file (replicate), [upload the CSR,] convert.
  const std::optional<timing>& load = d.device == device_kind::cpu ? f.load_host : f.load_device;
  if (ran && m.mtx_parse && load) {
    const double upload = d.csr_upload ? d.csr_upload->median : 0.0;
    const double from_mtx = m.mtx_parse->median + upload + conversion;
    r["from_mtx_s"] = num(from_mtx);
    r["load_vs_mtx"] = num(from_mtx / load->median);
  } else {
    r["from_mtx_s"] = nullptr;
    r["load_vs_mtx"] = nullptr;
  }
  return r;
}

std::vector<json> records(const report& rep) {
  std::vector<json> out;
  for (const auto& m : rep.matrices)
    for (const auto& d : m.devices)
      for (const auto& f : d.formats) out.push_back(record(m, d, f));
  return out;
}

double get(const json& r, const char* key) { return r[key].is_number() ? r[key].get<double>() : std::nan(""); }

std::string cell(const json& r, const char* key, const char* fmt, double scale = 1.0) {
  if (!r[key].is_number()) return "-";
  return printf_string(fmt, r[key].get<double>() * scale);
}

// Per device present in the report: geometric means per format over the matrices where the
// format ran and passed the check, the best format per matrix, the formats slower than the
// baseline on every matrix where they ran.
json summary(const report& rep, const std::vector<json>& recs) {
  json out = json::object();
  for (const char* dev : {"cpu", "gpu"}) {
    bool present = false;
    for (const auto& r : recs) present |= r["device"] == dev;
    if (!present) continue;
    json formats = json::array(), best = json::array(), losing = json::array();
    std::string baseline;
    for (const auto& r : recs)
      if (r["device"] == dev) baseline = r["baseline"].get<std::string>();
    // The formats in the order they were measured (CSR's row kernel "csr:rows" included).
    std::vector<std::string> names;
    for (const auto& r : recs) {
      const std::string name = r["format"].get<std::string>();
      if (r["device"] == dev && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    for (const auto& name : names) {
      double log_speedup = 0, log_conv = 0, log_back = 0, log_pct = 0;
      int n = 0, n_conv = 0, n_back = 0, n_pct = 0, wins = 0;
      for (const auto& r : recs) {
        if (r["device"] != dev || r["format"] != name || r["status"] != "ok") continue;
        const double s = get(r, "speedup");
        if (!(s > 0)) continue;
        log_speedup += std::log(s);
        ++n;
        wins += s > 1 ? 1 : 0;
        if (get(r, "conversion_spmvs") > 0) {
          log_conv += std::log(get(r, "conversion_spmvs"));
          ++n_conv;
        }
        if (get(r, "to_csr_spmvs") > 0) {
          log_back += std::log(get(r, "to_csr_spmvs"));
          ++n_back;
        }
        if (get(r, "bandwidth_pct") > 0) {
          log_pct += std::log(get(r, "bandwidth_pct"));
          ++n_pct;
        }
      }
      json f;
      f["format"] = name;
      f["matrices"] = n;
      f["geomean_speedup"] = n ? num(std::exp(log_speedup / n)) : json(nullptr);
      f["geomean_conversion_spmvs"] = n_conv ? num(std::exp(log_conv / n_conv)) : json(nullptr);
      f["geomean_to_csr_spmvs"] = n_back ? num(std::exp(log_back / n_back)) : json(nullptr);
      f["geomean_bandwidth_pct"] = n_pct ? num(std::exp(log_pct / n_pct)) : json(nullptr);
      f["faster_on"] = wins;
      formats.push_back(f);
      if (n > 0 && wins == 0) losing.push_back(name);
    }
    for (const auto& m : rep.matrices) {
      const json* top = nullptr;
      for (const auto& r : recs)
        if (r["device"] == dev && r["matrix"] == m.name && r["status"] == "ok" && r["speedup"].is_number() &&
            (!top || get(r, "speedup") > get(*top, "speedup")))
          top = &r;
      if (top)
        best.push_back({{"matrix", m.name},
                        {"format", (*top)["format"]},
                        {"speedup", (*top)["speedup"]},
                        {"beats_baseline", get(*top, "speedup") > 1}});
    }
    out[dev] = {{"baseline", baseline}, {"formats", formats}, {"best", best}, {"slower_everywhere", losing}};
  }
  return out;
}

}  // namespace

std::string header_text(const report& r) {
  const auto& mi = r.machine;
  const auto& s = r.config;
  std::string out = "spconv " + mi.version + " bench, " + mi.date + "\n";
  out += "cpu: " + mi.cpu + ", " + std::to_string(mi.threads) + " threads (SPCONV_THREADS); load average " + mi.loadavg + "\n";
  if (!mi.gpu.empty())
    out += printf_string("gpu: %s (%.0f GiB), ", mi.gpu.c_str(), static_cast<double>(mi.gpu_memory) / (1u << 30)) +
           mi.driver + "\n";
  out += std::string(to_string(s.values)) + " values, y = A*x (alpha 1, beta 0). SpMV: median and minimum of " +
         std::to_string(s.repeat) + " samples after a warm-up\n"
         "(GPU: a sample is a batch of SpMVs between two stream synchronisations, divided by the batch);\n"
         "conversions: median of " + std::to_string(s.repeat) + "; loads: median of " + std::to_string(s.io_repeat) +
         (s.scale_to > 0 ? "; matrices replicated along the diagonal to >= " + std::to_string(s.scale_to) + " entries"
                         : std::string()) +
         "\n"
         "GB/s: the format's bytes + x read + y written per SpMV time; % bw: of the copy bandwidth measured in\n"
         "this run on a buffer the size of the CSR arrays (GPU: device copy, CPU: parallel memcpy);\n"
         "conv/SpMV: CSR -> X in baseline SpMVs; break-even: SpMVs after which CSR -> X has paid for itself\n";
  return out;
}

std::string matrix_text(const matrix_figures& m) {
  std::string out = printf_string("\n%s: %lld x %lld, %lld entries, %s; CSR %.2f MB", m.name.c_str(),
                                  static_cast<long long>(m.rows), static_cast<long long>(m.cols),
                                  static_cast<long long>(m.nnz), std::string(to_string(m.values)).c_str(),
                                  static_cast<double>(m.csr_bytes) / 1e6);
  if (m.mtx_parse) out += printf_string("; Matrix Market parse %.2f ms", m.mtx_parse->median * 1e3);
  out += "\n";
  for (const auto& d : m.devices) {
    out += printf_string("  %s: baseline %s %.2f us (min %.2f us); copy bandwidth %.1f GB/s", device_name_of(d.device),
                         d.baseline.c_str(), d.baseline_spmv.median * 1e6, d.baseline_spmv.min * 1e6, d.bandwidth / 1e9);
    if (d.device == device_kind::gpu) out += printf_string("; %d SpMVs per sample", d.batch);
    out += "\n";
    out += printf_string("    %-6s %-40s %10s %10s %8s %8s %8s %6s %10s %10s %9s %10s  %s\n", "format", "params", "SpMV us",
                         "min us", "speedup", "GFLOP/s", "GB/s", "% bw", "CSR->X ms", "X->CSR ms", "conv/SpMV",
                         "break-even", "check");
    std::vector<json> recs;
    for (const auto& f : d.formats) recs.push_back(record(m, d, f));
    for (const auto& r : recs) {
      const std::string fmt = r["format"], params = r["params"];
      if (r["status"] == "refused") {
        out += printf_string("    %-6s refused: %s\n", fmt.c_str(), r["message"].get<std::string>().c_str());
        continue;
      }
      const std::string be = r["break_even"].is_string() ? r["break_even"].get<std::string>()
                             : r["break_even"].is_number() ? std::to_string(r["break_even"].get<std::int64_t>())
                                                           : "-";
      const std::string check = r["status"] == "ok" ? "ok"
                                                    : printf_string("WRONG %.1e > %.1e", get(r, "max_rel_error"),
                                                                    get(r, "error_bound"));
      out += printf_string("    %-6s %-40s %10s %10s %8s %8s %8s %6s %10s %10s %9s %10s  %s\n", fmt.c_str(),
                           params.empty() ? "-" : params.c_str(), cell(r, "spmv_median_s", "%.2f", 1e6).c_str(),
                           cell(r, "spmv_min_s", "%.2f", 1e6).c_str(), cell(r, "speedup", "%.2f").c_str(),
                           cell(r, "gflops", "%.2f").c_str(), cell(r, "effective_gbps", "%.1f").c_str(),
                           cell(r, "bandwidth_pct", "%.0f%%").c_str(), cell(r, "to_format_median_s", "%.3f", 1e3).c_str(),
                           cell(r, "to_csr_median_s", "%.3f", 1e3).c_str(), cell(r, "conversion_spmvs", "%.1f").c_str(),
                           be.c_str(), check.c_str());
    }
    bool storage = false;
    for (const auto& r : recs) storage |= r["container_zstd_bytes"].is_number();
    if (!storage) continue;
    out += printf_string("    %-6s %10s %7s %7s %10s %10s %12s %12s %9s\n", "format", "MB", "B/nnz", "vs CSR", "zstd MB",
                         "raw MB", d.device == device_kind::cpu ? "load->cpu ms" : "load->gpu ms", "from MTX ms",
                         "MTX/load");
    for (const auto& r : recs) {
      if (r["status"] == "refused") continue;
      out += printf_string("    %-6s %10s %7s %7s %10s %10s %12s %12s %9s\n", r["format"].get<std::string>().c_str(),
                           cell(r, "bytes", "%.2f", 1e-6).c_str(), cell(r, "bytes_per_nnz", "%.2f").c_str(),
                           cell(r, "footprint_vs_csr", "%.2f").c_str(), cell(r, "container_zstd_bytes", "%.2f", 1e-6).c_str(),
                           cell(r, "container_raw_bytes", "%.2f", 1e-6).c_str(),
                           cell(r, d.device == device_kind::cpu ? "load_host_median_s" : "load_device_median_s", "%.2f", 1e3)
                               .c_str(),
                           cell(r, "from_mtx_s", "%.2f", 1e3).c_str(), cell(r, "load_vs_mtx", "%.2f").c_str());
    }
  }
  return out;
}

std::string summary_text(const report& rep) {
  const std::vector<json> recs = records(rep);
  const json s = summary(rep, recs);
  std::string out;
  for (const auto& [dev, d] : s.items()) {
    out += "\nsummary, " + dev + " (baseline " + d["baseline"].get<std::string>() +
           "): geometric means over the matrices where the format ran and passed the check\n";
    out += printf_string("  %-6s %8s %8s %7s %10s %10s %9s\n", "format", "matrices", "speedup", "% bw", "conv/SpMV",
                         "back/SpMV", "faster on");
    for (const auto& f : d["formats"])
      out += printf_string("  %-6s %8d %8s %7s %10s %10s %9d\n", f["format"].get<std::string>().c_str(),
                           f["matrices"].get<int>(), cell(f, "geomean_speedup", "%.2f").c_str(),
                           cell(f, "geomean_bandwidth_pct", "%.0f%%").c_str(),
                           cell(f, "geomean_conversion_spmvs", "%.1f").c_str(),
                           cell(f, "geomean_to_csr_spmvs", "%.1f").c_str(), f["faster_on"].get<int>());
    out += "  best format per matrix:\n";
    for (const auto& b : d["best"])
      out += printf_string("    %-40s %-6s %.2fx%s\n", b["matrix"].get<std::string>().c_str(),
                           b["format"].get<std::string>().c_str(), b["speedup"].get<double>(),
                           b["beats_baseline"].get<bool>() ? "" : " (the baseline is faster)");
    std::string losing;
    for (const auto& l : d["slower_everywhere"]) losing += (losing.empty() ? "" : ", ") + l.get<std::string>();
    out += "  slower than the baseline on every matrix: " + (losing.empty() ? std::string("none") : losing) + "\n";
  }
  for (const auto& [file, why] : rep.skipped) out += "skipped " + file + ": " + why + "\n";
  out += "load average after: " + rep.machine.loadavg_after + "\n";
  return out;
}

std::string json_text(const report& rep) {
  const auto& mi = rep.machine;
  const auto& s = rep.config;
  const std::vector<json> recs = records(rep);
  json j;
  j["spconv_version"] = mi.version;
  j["date"] = mi.date;
  j["machine"] = {{"cpu", mi.cpu},
                  {"threads", mi.threads},
                  {"loadavg", mi.loadavg},
                  {"loadavg_after", mi.loadavg_after},
                  {"gpu", mi.gpu.empty() ? json(nullptr) : json(mi.gpu)},
                  {"driver", mi.driver.empty() ? json(nullptr) : json(mi.driver)},
                  {"gpu_memory_bytes", mi.gpu.empty() ? json(nullptr) : json(mi.gpu_memory)}};
  json devices = json::array();
  if (s.cpu) devices.push_back("cpu");
  if (s.gpu) devices.push_back("gpu");
  j["settings"] = {{"value_type", to_string(s.values)}, {"devices", devices},  {"formats", s.formats},
                   {"repeat", s.repeat},                 {"io_repeat", s.io_repeat}, {"batch", s.batch},
                   {"scale_to", s.scale_to},             {"storage", s.storage}};
  j["matrices"] = json::array();
  for (const auto& m : rep.matrices) {
    json jm = {{"name", m.name},
               {"path", m.path},
               {"rows", m.rows},
               {"cols", m.cols},
               {"nnz", m.nnz},
               {"copies", m.copies},
               {"value_type", to_string(m.values)},
               {"csr_bytes", m.csr_bytes},
               {"mtx_parse_median_s", m.mtx_parse ? num(m.mtx_parse->median) : json(nullptr)},
               {"mtx_parse_min_s", m.mtx_parse ? num(m.mtx_parse->min) : json(nullptr)}};
    jm["devices"] = json::array();
    for (const auto& d : m.devices)
      jm["devices"].push_back({{"device", device_name_of(d.device)},
                               {"baseline", d.baseline},
                               {"baseline_spmv_median_s", num(d.baseline_spmv.median)},
                               {"baseline_spmv_min_s", num(d.baseline_spmv.min)},
                               {"bandwidth_gbps", num(d.bandwidth / 1e9)},
                               {"batch", d.batch},
                               {"csr_upload_median_s", d.csr_upload ? num(d.csr_upload->median) : json(nullptr)}});
    j["matrices"].push_back(jm);
  }
  j["results"] = recs;
  j["summary"] = summary(rep, recs);
  j["skipped"] = json::array();
  for (const auto& [file, why] : rep.skipped) j["skipped"].push_back({{"file", file}, {"reason", why}});
  return j.dump(2) + "\n";
}

std::string csv_text(const report& rep) {
  // The columns are the keys of a record; a record of empty figures names them even when no
  // matrix was measured.
  const json columns = record(matrix_figures{}, device_figures{}, format_figures{});
  auto field = [](const json& v) -> std::string {
    if (v.is_null()) return "";
    if (!v.is_string()) return v.dump();
    const std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out;
  for (auto it = columns.begin(); it != columns.end(); ++it) {
    if (it != columns.begin()) out += ',';
    out += it.key();
  }
  out += "\n";
  for (const auto& r : records(rep)) {
    bool first = true;
    for (auto it = r.begin(); it != r.end(); ++it) {
      if (!first) out += ',';
      out += field(it.value());
      first = false;
    }
    out += "\n";
  }
  return out;
}

}  // namespace spconv::bench
