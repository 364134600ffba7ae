// spconv formats
#include <iostream>

#include "formats/any_matrix.hpp"
#include "tools/commands.hpp"

namespace spconv::cli {

command add_formats(CLI::App& app) {
  auto* sub = app.add_subcommand("formats", "List the formats and their parameters");
  return {sub, [] {
            for (const auto& d : format_descriptions) {
              std::cout << d.name << "  " << d.summary << "\n";
              if (!d.paper.empty()) std::cout << "    follows: " << d.paper << "\n";
              std::cout << "    spec: specs/formats/" << d.name << ".md\n";
            }
            return 0;
          }};
}

}  // namespace spconv::cli
