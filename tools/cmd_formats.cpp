// spconv formats
#include <iostream>

#include "formats/any_matrix.hpp"
#include "tools/commands.hpp"
#include "tools/format_options.hpp"

namespace spconv::cli {

command add_formats(CLI::App& app) {
  auto* sub = app.add_subcommand("formats", "List the formats and their parameters");
  return {sub, [] {
            for (const auto& d : format_descriptions) {
              std::cout << d.name << "  " << d.summary << "\n";
              if (!d.paper.empty()) std::cout << "    follows: " << d.paper << "\n";
              for (const auto& p : format_option_docs)
                if (p.format == d.name)
                  std::cout << "    " << p.option << ": " << p.meaning << " (automatic: " << p.automatic << ")\n";
              std::cout << "    spec: specs/formats/" << d.name << ".md\n";
            }
            return 0;
          }};
}

}  // namespace spconv::cli
