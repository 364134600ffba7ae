// spconv info FILE [--json]
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "convert/graph.hpp"
#include "convert/select_format.hpp"
#include "formats/csr_stats.hpp"
#include "formats/describe.hpp"
#include "io/api.hpp"
#include "tools/commands.hpp"

namespace spconv::cli {
namespace fs = std::filesystem;

namespace {

csr_stats stats_of(const any_matrix& m) {
  any_matrix c = format_name(m) == "csr" ? m : convert(m, "csr");
  return std::visit(
      [](const auto& a) -> csr_stats {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(a)>,
                                     csr<typename std::remove_cvref_t<decltype(a)>::value_type,
                                         typename std::remove_cvref_t<decltype(a)>::index_type>>)
          return compute_stats(a);
        else
          fail(errc::bad_input, "internal: conversion to csr gave another format");
      },
      c);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

command add_info(CLI::App& app) {
  struct opts {
    std::string file;
    bool json = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("info", "Show a matrix file's shape, row-length statistics and stored formats");
  sub->add_option("FILE", o->file, "container (.h5) or Matrix Market file")->required();
  sub->add_flag("--json", o->json, "print JSON instead of text");

  return {sub, [o] {
            const bool is_h5 = detect_file_kind(o->file) == file_kind::hdf5;
            nlohmann::ordered_json j;
            j["file"] = o->file;
            j["file_bytes"] = fs::file_size(o->file);
            j["kind"] = is_h5 ? "container" : "matrix-market";
            std::vector<stored_format> stored;
            if (is_h5) {
              container_info ci = read_container_info(o->file);
              j["container_version"] = ci.container_version;
              stored = ci.formats;
            }
            matrix_file f = read_matrix_file(o->file);
            const csr_stats s = stats_of(f.matrix);
            j["rows"] = s.rows;
            j["cols"] = s.cols;
            j["nnz"] = s.nnz;
            j["value_type"] = to_string(value_type_of(f.matrix));
            j["index_type"] = to_string(index_type_of(f.matrix));
            j["source"] = {{"name", f.meta.source_name},
                           {"checksum", f.meta.source_checksum},
                           {"symmetry", f.meta.source_symmetry}};
            if (!f.meta.creator.empty()) j["creator"] = f.meta.creator;
            j["row_length"] = {{"min", s.row_min}, {"mean", s.row_mean}, {"max", s.row_max}, {"stddev", s.row_stddev}};
            j["empty_rows"] = s.empty_rows;
            j["explicit_zeros"] = s.explicit_zeros;
            const double csr_b =
                static_cast<double>(csr_bytes(s.rows, s.nnz, value_type_of(f.matrix), index_type_of(f.matrix)));
            j["csr_bytes"] = csr_b;
            j["formats"] = nlohmann::ordered_json::array();
            for (const auto& sf : stored) {
              // Loading validates the format; its parameters and figures come from it.
              read_options group;
              group.format = sf.name;
              const any_matrix m = format_name(f.matrix) == sf.name ? f.matrix : read(o->file, group);
              nlohmann::ordered_json params = nlohmann::ordered_json::object(), figures = nlohmann::ordered_json::object();
              for (const auto& [k, v] : params_of(m)) params[k] = v;
              for (const auto& [k, v] : figures_of(m)) figures[k] = v;
              j["formats"].push_back({{"name", sf.name},
                                      {"version", sf.version},
                                      {"params", params},
                                      {"figures", figures},
                                      {"raw_bytes", sf.raw_bytes},
                                      {"stored_bytes", sf.stored_bytes},
                                      {"bytes_per_nnz", s.nnz ? double(sf.raw_bytes) / double(s.nnz) : 0.0},
                                      {"bytes_vs_csr", csr_b > 0 ? double(sf.raw_bytes) / csr_b : 0.0}});
            }
            // The formats expected to give the fastest SpMV (specs/select_format.md).
            const format_choice recommended[] = {select_format(f.matrix, spmv_device::gpu),
                                                 select_format(f.matrix, spmv_device::cpu)};
            for (const format_choice& c : recommended) {
              nlohmann::ordered_json st = nlohmann::ordered_json::object();
              for (const auto& [k, v] : choice_statistics(c))  // counts print as integers
                st[k] = v == std::trunc(v) && std::abs(v) < 0x1p53 ? nlohmann::ordered_json(static_cast<std::int64_t>(v))
                                                                   : nlohmann::ordered_json(v);
              j["recommendation"][std::string(to_string(c.device))] = {
                  {"format", c.format}, {"reason", c.reason}, {"step", c.step}, {"statistics", st}};
            }
            if (o->json) {
              std::cout << j.dump(2) << "\n";
              return 0;
            }
            std::cout << o->file << ": " << (is_h5 ? "spconv container v" + std::to_string(j["container_version"].get<int>()) : "Matrix Market")
                      << ", " << j["file_bytes"].get<std::uint64_t>() << " bytes\n";
            std::cout << "  shape       " << s.rows << " x " << s.cols << ", " << s.nnz << " entries ("
                      << j["value_type"].get<std::string>() << " values, " << j["index_type"].get<std::string>()
                      << " indices)\n";
            if (!f.meta.source_name.empty())
              std::cout << "  source      " << f.meta.source_name << " (" << f.meta.source_symmetry << ", "
                        << f.meta.source_checksum << ")\n";
            std::cout << "  row length  min " << s.row_min << ", mean " << fixed(s.row_mean, 2) << ", max " << s.row_max
                      << ", stddev " << fixed(s.row_stddev, 2) << "\n";
            std::cout << "  empty rows  " << s.empty_rows << "\n";
            std::cout << "  zeros       " << s.explicit_zeros << " explicitly stored\n";
            if (is_h5) {
              std::cout << "  formats\n";
              for (const auto& jf : j["formats"]) {
                std::string extra;
                for (const auto& [k, v] : jf["params"].items()) extra += (extra.empty() ? "" : ", ") + k + " " + v.dump();
                for (const auto& [k, v] : jf["figures"].items())
                  extra += (extra.empty() ? "" : ", ") + k + " " + fixed(v.get<double>(), 3);
                std::cout << "    " << jf["name"].get<std::string>() << " v" << jf["version"].get<int>()
                          << (extra.empty() ? "" : " (" + extra + ")") << ": " << jf["raw_bytes"].get<std::uint64_t>()
                          << " bytes, " << fixed(jf["bytes_per_nnz"].get<double>(), 2) << " per entry, "
                          << fixed(jf["bytes_vs_csr"].get<double>(), 2) << "x CSR; "
                          << jf["stored_bytes"].get<std::uint64_t>() << " bytes stored\n";
              }
            }
            for (const format_choice& c : recommended) std::cout << "  recommend   " << describe_choice(c) << "\n";
            return 0;
          }};
}

}  // namespace spconv::cli
