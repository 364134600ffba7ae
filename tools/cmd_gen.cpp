// spconv gen KIND PARAMS... OUT [--seed S] [--type float|double]
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "io/generate.hpp"
#include "io/matrix_file.hpp"
#include "tools/commands.hpp"

namespace spconv::cli {
namespace fs = std::filesystem;

namespace {

// The kinds and their parameters, from the library's table.
std::string kinds_help() {
  std::string s = "Kinds (parameters in order; [P=v]: optional, default v):\n";
  for (const auto& k : gen::kinds()) {
    std::string line = "  " + std::string(k.name);
    for (const auto& p : k.params)
      line += p.fallback ? " [" + std::string(p.name) + "=" + std::to_string(*p.fallback) + "]" : " " + std::string(p.name);
    s += line + "\n      " + std::string(k.summary) + "\n";
    for (const auto& p : k.params) s += "      " + std::string(p.name) + ": " + std::string(p.meaning) + "\n";
  }
  return s;
}

std::int64_t parse_param(std::string_view kind, const std::string& s) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE)
    fail(errc::usage, "gen " + std::string(kind) + ": parameter '" + s + "' is not an integer");
  return v;
}

}  // namespace

command add_gen(CLI::App& app) {
  struct opts {
    std::string kind, type = "double", compression = "zstd";
    std::vector<std::string> rest;  // the parameters, then OUT
    std::uint64_t seed = 1;
    bool force = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("gen", "Write a synthetic matrix (stencil, R-MAT, random, banded, blocks) to OUT (.h5 or .mtx)");
  sub->add_option("KIND", o->kind, "what to generate (see below)")->required();
  sub->add_option("PARAMS OUT", o->rest, "the kind's integer parameters, then the output file (.h5 or .mtx)")->required();
  sub->add_option("--seed", o->seed, "random seed: the same kind, parameters and seed give the same matrix")->capture_default_str();
  sub->add_option("--type", o->type, "value type: float or double")->capture_default_str();
  sub->add_option("--compression", o->compression, "container datasets: none, zstd or zstd:LEVEL (1-22)")->capture_default_str();
  sub->add_flag("--force", o->force, "replace OUT if it exists");
  sub->footer(kinds_help() +
              "\nThe result is canonical CSR with 32-bit indices, identical for a seed whatever the thread count.\n"
              "Examples:\n"
              "  spconv gen stencil27 203 stencil27_203.h5     # 8.4M rows, 224M entries\n"
              "  spconv gen rmat 20 rmat20.h5                  # 2^20 vertices, edge factor 16\n"
              "  spconv gen random 100000 100000 12 rand.mtx --seed 7 --type float\n"
              "  spconv gen blocks 60000 60000 4 4 8 blocks.h5");

  return {sub, [o] {
            const fs::path out = o->rest.back();
            std::vector<std::int64_t> params;
            for (std::size_t i = 0; i + 1 < o->rest.size(); ++i) params.push_back(parse_param(o->kind, o->rest[i]));
            // Everything that can be refused is refused before a large matrix is built.
            const value_type vt = parse_value_type(o->type);
            write_options wo;
            wo.comp = parse_compression(o->compression);
            wo.force = o->force;
            if (!is_container_path(out) && !is_mtx_path(out))
              fail(errc::usage, out.string() + ": unknown output kind (use .h5 for a container or .mtx for Matrix Market)");
            if (fs::exists(out) && !o->force) fail(errc::usage, out.string() + " exists (use --force to replace it)");

            const any_matrix m = gen::generate(o->kind, params, vt, o->seed);
            container_meta meta;
            meta.source_name = "spconv gen " + gen::describe(o->kind, params, o->seed);
            write_matrix_file(out, {m}, meta, wo);
            std::cout << out.string() << ": " << gen::describe(o->kind, params, o->seed) << ", " << rows_of(m) << " x "
                      << cols_of(m) << ", " << std::visit([](const auto& a) { return a.nnz(); }, m) << " entries, "
                      << to_string(value_type_of(m)) << " values\n";
            return 0;
          }};
}

}  // namespace spconv::cli
