// spconv validate FILE [--against SOURCE]
#include <cmath>
#include <iostream>
#include <random>

#include "io/api.hpp"
#include "tools/commands.hpp"

namespace spconv::cli {

namespace {

struct check_result {
  bool ok = true;
  std::string note;  // what failed, or the error figure
};

// X's own SpMV against the CSR reference on a seeded random x and y0, for alpha/beta
// (1, 0) and (-0.5, 2); returns the larger error in tolerance units.
template <class V, class I>
check_result check_spmv(const any_matrix& x_form, const csr<V, I>& ref) {
  std::mt19937_64 rng(20261123);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<V> x(ref.cols), y0(ref.rows), y(ref.rows);
  for (auto& v : x) v = static_cast<V>(u(rng));
  for (auto& v : y0) v = static_cast<V>(u(rng));
  std::int64_t longest = 0;
  for (std::int64_t r = 0; r < ref.rows; ++r) longest = std::max<std::int64_t>(longest, ref.row_ptr[r + 1] - ref.row_ptr[r]);
  const double tol = cpu::spmv_tolerance<V>(longest);
  double worst = 0;
  for (auto [alpha, beta] : {std::pair<V, V>{1, 0}, std::pair<V, V>{V(-0.5), V(2)}}) {
    y = y0;
    cpu::spmv(x_form, alpha, x.data(), beta, y.data());
    worst = std::max(worst, cpu::spmv_max_rel_error(ref, alpha, x.data(), beta, y0.data(), y.data()));
  }
  char buf[128];
  std::snprintf(buf, sizeof buf, "SpMV max relative error %.3g (tolerance %.3g)", worst, tol);
  return {worst <= tol, buf};
}

// Reads one stored format of the container as it is (no value cast).
read_options stored(const std::string& format) {
  read_options ro;
  ro.format = format;
  return ro;
}

}  // namespace

command add_validate(CLI::App& app) {
  struct opts {
    std::string file, against;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "validate",
      "Check every stored format of a container: its invariants, its conversion back to CSR, and its SpMV "
      "against the CSR reference");
  sub->add_option("FILE", o->file, "container (.h5)")->required();
  sub->add_option("--against", o->against,
                  "the source (.mtx or .h5) to compare with; default: the container's csr group if stored, "
                  "else each format's own conversion to CSR");

  return {sub, [o] {
            const container_info info = read_container_info(o->file);
            read_options ro;
            ro.values = info.values;
            std::optional<any_matrix> reference;
            if (!o->against.empty()) {
              convert_options co;
              co.index = info.index;
              reference = convert(read(o->against, ro), "csr", co);
            } else {
              for (const auto& sf : info.formats)
                if (sf.name == "csr") reference = read(o->file, stored(sf.name));
            }
            int failures = 0;
            for (const auto& sf : info.formats) {
              check_result r;
              try {
                const any_matrix m = read(o->file, stored(sf.name));  // validates the invariants
                const any_matrix back = convert(m, "csr");
                const any_matrix& ref = reference ? *reference : back;
                if (reference && !equal(back, *reference)) {
                  r = {false, "converts back to a CSR that differs from the reference"};
                } else {
                  r = std::visit(
                      [&](const auto& c) -> check_result {
                        using C = std::remove_cvref_t<decltype(c)>;
                        if constexpr (std::is_same_v<C, csr<typename C::value_type, typename C::index_type>>)
                          return check_spmv(m, c);
                        else
                          fail(errc::bad_input, "internal: reference is not CSR");
                      },
                      ref);
                  r.note = "invariants hold, " + r.note;
                }
              } catch (const error& e) {
                r = {false, e.what()};
              }
              failures += !r.ok;
              std::cout << sf.name << ": " << (r.ok ? "ok, " : "FAILED: ") << r.note << "\n";
            }
            if (failures) {
              std::cerr << "spconv: " << failures << " of " << info.formats.size() << " formats failed validation\n";
              return static_cast<int>(errc::bad_input);
            }
            return 0;
          }};
}

}  // namespace spconv::cli
