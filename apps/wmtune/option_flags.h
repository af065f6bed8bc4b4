// Command-line flags from option tables (wm/support/options.h): each row with a flag becomes a
// CLI11 option or flag with its help, its default and its check. No subcommand declares a
// flag of an options struct by hand.
#pragma once

#include <wm/support/options.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace wm::cli {

/// Adds the table's flags to the subcommand (all of them, or those whose keys are in `only`).
template <typename S>
void addOptionFlags(CLI::App& app, S& s, const OptionTable<S>& table,
                    const std::vector<std::string>& only = {}) {
  for (const auto& o : table) {
    if (o.flag.empty()) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), o.key) == only.end()) continue;
    std::visit(
        [&](auto m) {
          using T = std::decay_t<decltype(s.*m)>;
          if constexpr (std::is_same_v<T, bool>) {
            app.add_flag(o.flag, s.*m, o.help);
          } else {
            CLI::Option* opt = app.add_option(o.flag, s.*m, o.help)->capture_default_str();
            if constexpr (std::is_same_v<T, std::string>) {
              if (!o.choices.empty()) opt->check(CLI::IsMember(o.choices));
            } else {
              if (std::isfinite(o.lo) || std::isfinite(o.hi)) {
                double lo = std::isfinite(o.lo) ? o.lo : -1e300,
                       hi = std::isfinite(o.hi) ? o.hi : 1e300;
                opt->check(CLI::Range(lo, hi));
              }
            }
          }
        },
        o.member);
  }
}

} // namespace wm::cli
