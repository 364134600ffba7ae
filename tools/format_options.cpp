#include "tools/format_options.hpp"

#include <charconv>

namespace spconv::cli {

const std::vector<format_option_doc> format_option_docs = {
    {"cmrs", "--height N", "rows per strip, 1..16",
     "by mean row length: 16 below 4, 8 below 32, else 6 (float) / 4 (double); 16 with --modulo < 32"},
    {"cmrs", "--modulo M", "sec. 6.7 within-strip reordering for a reduced buffer: 2, 4, 8, 16; 32 = off", "32"},
    {"cmrs", "--sort-columns", "order each strip by column (sec. 4; basic layout only)", "off"},
    {"mbr", "--block RxC", "block size, r*c <= 64", "fewest stored bytes among {1,2,4,8}^2"},
    {"csr5", "--omega N --sigma N", "tile width and height, 1..64",
     "GPU rule: omega 32, sigma by nnz/row (thesis 6.3.2; 8 or 16 for rows of up to 16)"},
    {"csr5", "--for gpu|cpu", "whose rule picks automatic omega/sigma (also --to auto's device)", "gpu"},
    {"bcsr", "--block RxC", "block size, 1..16 each",
     "fewest SpMV bytes among {1,2,3,4,6,8}^2 (fill ratio), blocks over 1x1 counted x5/4"},
    {"hyb", "--ell-width N", "ELL slots per row; the rest goes to the COO tail",
     "largest w with >= max(4096, rows/3) rows of length >= w (CUSP rule)"},
    {"ccoo", "--chunk BxK", "B groups of K entries per chunk, B 1..256, K 1..1024", "256 x (4, 2 or 1 by padding cost)"},
};

namespace {

// "RxC" -> (r, c), both >= 0 (0 = automatic).
std::pair<std::int32_t, std::int32_t> parse_pair(const std::string& s, const char* option) {
  auto x = s.find_first_of("xX");
  std::int32_t a = -1, b = -1;
  auto ok = [](const char* p, const char* e, std::int32_t& v) {
    auto r = std::from_chars(p, e, v);
    return r.ec == std::errc() && r.ptr == e && v >= 0;
  };
  if (x == std::string::npos || !ok(s.data(), s.data() + x, a) || !ok(s.data() + x + 1, s.data() + s.size(), b))
    fail(errc::usage, std::string(option) + " " + s + ": expected two numbers as AxB (e.g. 4x4)");
  return {a, b};
}

}  // namespace

std::function<void(convert_options&)> add_format_options(CLI::App& sub, bool with_target) {
  struct values {
    std::int32_t height = 0, modulo = 0, omega = 0, sigma = 0;
    std::int64_t ell_width = 0;
    bool sort_columns = false;
    std::string block, chunk, csr5_for = "gpu";
  };
  auto v = std::make_shared<values>();
  const char* group = "Format parameters (0 or absent: automatic; `spconv formats` lists the rules)";
  sub.add_option("--height", v->height, "cmrs: rows per strip (1-16)")->group(group);
  sub.add_option("--modulo", v->modulo, "cmrs: sec. 6.7 reordering modulus (2, 4, 8, 16; 32 = off)")->group(group);
  sub.add_flag("--sort-columns", v->sort_columns, "cmrs: order each strip by column")->group(group);
  sub.add_option("--block", v->block, "mbr, bcsr: block size RxC (e.g. 4x4)")->group(group);
  sub.add_option("--omega", v->omega, "csr5: tile width")->group(group);
  sub.add_option("--sigma", v->sigma, "csr5: tile height")->group(group);
  if (with_target)
    sub.add_option("--for,--csr5-for", v->csr5_for,
                   "the processor the SpMV will run on, gpu or cpu: picks --to auto's format and csr5's automatic "
                   "omega/sigma")
        ->check(CLI::IsMember({"gpu", "cpu"}))
        ->group(group);
  sub.add_option("--ell-width", v->ell_width, "hyb: ELL width")->group(group);
  sub.add_option("--chunk", v->chunk, "ccoo: chunk shape BxK (e.g. 256x4)")->group(group);
  return [v](convert_options& o) {
    o.cmrs.height = v->height;
    o.cmrs.modulo = v->modulo;
    o.cmrs.sort_columns = v->sort_columns;
    if (!v->block.empty()) {
      auto [r, c] = parse_pair(v->block, "--block");
      o.mbr.block_rows = o.bcsr.block_rows = r;
      o.mbr.block_cols = o.bcsr.block_cols = c;
    }
    o.csr5.omega = v->omega;
    o.csr5.sigma = v->sigma;
    o.csr5_for = v->csr5_for == "cpu" ? csr5_target::cpu : csr5_target::gpu;
    o.hyb.ell_width = v->ell_width;
    if (!v->chunk.empty()) {
      auto [b, k] = parse_pair(v->chunk, "--chunk");
      o.ccoo.chunk_b = b;
      o.ccoo.chunk_k = k;
    }
  };
}

}  // namespace spconv::cli
