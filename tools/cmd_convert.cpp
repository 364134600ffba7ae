// spconv [convert] IN --to FORMAT OUT
#include <filesystem>
#include <iostream>

#include "convert/graph.hpp"
#include "convert/select_format.hpp"
#include "io/matrix_file.hpp"
#include "tools/commands.hpp"
#include "tools/device_option.hpp"
#include "tools/format_options.hpp"
#ifdef SPCONV_HAVE_CUDA
#include "convert/gpu/graph.hpp"
#endif

namespace spconv::cli {
namespace fs = std::filesystem;

namespace {

// The conversion on the GPU: Matrix Market triplets (or the stored format) go to the device,
// COO -> CSR -> target runs there (convert/gpu/graph.hpp), the result comes back. Its bytes
// equal the CPU's.
any_matrix convert_on_gpu([[maybe_unused]] const any_matrix& in, [[maybe_unused]] const std::string& target,
                          [[maybe_unused]] const convert_options& co, std::string& device) {
#ifdef SPCONV_HAVE_CUDA
  gpu_context ctx;
  device = device_name(ctx.device());
  return to_host(gpu::convert(to_device(in), target, co, ctx));
#else
  (void)device;
  fail(errc::device, "this spconv was built without CUDA");
#endif
}

}  // namespace

command add_convert(CLI::App& app) {
  struct opts {
    std::string in, out, to, type, index, compression = "zstd", from, device = "cpu";
    bool force = false, add = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand("convert", "Convert IN (.mtx, .mtx.gz, .h5) to FORMAT and write OUT (.h5 or .mtx)");
  sub->add_option("IN", o->in, "input file: Matrix Market (.mtx, .mtx.gz) or spconv container (.h5)")->required();
  sub->add_option("OUT", o->out, "output file: container (.h5) or Matrix Market (.mtx)")->required();
  sub->add_option("--to", o->to,
                  "target format: " + format_names_joined(", ") +
                      ", or auto: the format expected to give the fastest SpMV on the --for processor "
                      "(specs/select_format.md)")
      ->required();
  sub->add_option("--type", o->type, "value type: float or double (default: double for .mtx, as stored for .h5)");
  sub->add_option("--index", o->index, "CSR/COO index type: int32 or int64 (default: int32 unless the matrix needs int64)");
  sub->add_option("--from", o->from, "container input: the stored format to start from (default: csr if stored)");
  sub->add_option("--compression", o->compression, "container datasets: none, zstd or zstd:LEVEL (1-22)")->capture_default_str();
  sub->add_flag("--force", o->force, "replace OUT if it exists");
  sub->add_flag("--add", o->add, "put the format into the existing container OUT, keeping its other formats");
  add_device_option(*sub, o->device, "convert");
  auto params = add_format_options(*sub);
  sub->footer(
      "Examples:\n"
      "  spconv matrix.mtx --to csr matrix.h5\n"
      "  spconv matrix.mtx.gz --to coo --type float --compression zstd:9 matrix.h5\n"
      "  spconv matrix.mtx --to csr5 matrix.h5\n"
      "  spconv matrix.h5 --to hyb --ell-width 12 --add matrix.h5\n"
      "  spconv matrix.mtx --to bcsr --device gpu matrix.h5\n"
      "  spconv matrix.mtx --to auto --for gpu matrix.h5\n"
      "  spconv matrix.h5 --to csr back.mtx");

  return {sub, [o, params] {
            // Everything that can be checked before reading the input is checked first.
            if (o->to != "auto") check_format_name(o->to);
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

            const bool gpu = use_gpu(o->device);
            ro.mtx_triplets = gpu;  // the GPU sorts the triplets itself
            matrix_file f = read_matrix_file(o->in, ro);
            std::string target = o->to, device;
            if (target == "auto") {
              const format_choice choice = select_format(
                  f.matrix, co.csr5_for == csr5_target::cpu ? spmv_device::cpu : spmv_device::gpu);
              target = choice.format;
              std::cout << "auto: " << describe_choice(choice) << "\n";
            }
            any_matrix result = gpu ? convert_on_gpu(f.matrix, target, co, device) : convert(f.matrix, target, co);
            write_matrix_file(o->out, {result}, f.meta, wo);
            std::cout << o->out << ": " << target << ", " << rows_of(result) << " x " << cols_of(result) << ", "
                      << to_string(value_type_of(result)) << " values, " << to_string(index_type_of(result))
                      << " indices" << (gpu ? ", converted on " + device : std::string()) << "\n";
            return 0;
          }};
}

}  // namespace spconv::cli
