// spconv [convert] IN --to FORMAT OUT
#include <filesystem>
#include <iostream>

#include "convert/graph.hpp"
#include "io/matrix_file.hpp"
#include "tools/commands.hpp"
#include "tools/format_options.hpp"

namespace spconv::cli {
namespace fs = std::filesystem;

command add_convert(CLI::App& app) {
  struct opts {
    std::string in, out, to, type, index, compression = "zstd", from;
    bool force = false, add = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("convert", "Convert IN (.mtx, .mtx.gz, .h5) to FORMAT and write OUT (.h5 or .mtx)");
  sub->add_option("IN", o->in, "input file: Matrix Market (.mtx, .mtx.gz) or spconv container (.h5)")->required();
  sub->add_option("OUT", o->out, "output file: container (.h5) or Matrix Market (.mtx)")->required();
  sub->add_option("--to", o->to, "target format: " + format_names_joined(", "))->required();
  sub->add_option("--type", o->type, "value type: float or double (default: double for .mtx, as stored for .h5)");
  sub->add_option("--index", o->index, "CSR/COO index type: int32 or int64 (default: int32 unless the matrix needs int64)");
  sub->add_option("--from", o->from, "container input: the stored format to start from (default: csr if stored)");
  sub->add_option("--compression", o->compression, "container datasets: none, zstd or zstd:LEVEL (1-22)")->capture_default_str();
  sub->add_flag("--force", o->force, "replace OUT if it exists");
  sub->add_flag("--add", o->add, "put the format into the existing container OUT, keeping its other formats");
  auto params = add_format_options(*sub);
  sub->footer(
      "Examples:\n"
      "  spconv matrix.mtx --to csr matrix.h5\n"
      "  spconv matrix.mtx.gz --to coo --type float --compression zstd:9 matrix.h5\n"
      "  spconv matrix.mtx --to csr5 matrix.h5\n"
      "  spconv matrix.h5 --to hyb --ell-width 12 --add matrix.h5\n"
      "  spconv matrix.h5 --to csr back.mtx");

  return {sub, [o, params] {
            // Everything that can be checked before reading the input is checked first.
            check_format_name(o->to);
            write_options wo;
            wo.comp = parse_compression(o->compression);
            wo.force = o->force;
            wo.add = o->add;
            if (!is_container_path(o->out) && !is_mtx_path(o->out))
              fail(errc::usage, o->out + ": unknown output kind (use .h5 for a container or .mtx for Matrix Market)");
            if (fs::exists(o->out) && !o->force && !o->add)
              fail(errc::usage, o->out + " exists (use --force to replace it, or --add to add a format to it)");
            if (o->add && !fs::exists(o->out)) fail(errc::usage, o->out + ": --add needs an existing container");
            read_options ro;
            if (!o->type.empty()) ro.values = parse_value_type(o->type);
            ro.format = o->from;
            convert_options co;
            if (!o->index.empty()) co.index = parse_index_type(o->index);
            params(co);

            matrix_file f = read_matrix_file(o->in, ro);
            any_matrix result = convert(f.matrix, o->to, co);
            write_matrix_file(o->out, {result}, f.meta, wo);
            std::cout << o->out << ": " << o->to << ", " << rows_of(result) << " x " << cols_of(result) << ", "
                      << to_string(value_type_of(result)) << " values, " << to_string(index_type_of(result))
                      << " indices\n";
            return 0;
          }};
}

}  // namespace spconv::cli
