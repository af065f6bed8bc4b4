// Logging setup. Everything below apps/ reports through spdlog (stderr), never std::cout.
#pragma once

namespace wm {

/// verbosity: -1 quiet (errors only), 0 default (info), 1 debug, 2+ trace.
void setupLogging(int verbosity);

} // namespace wm
