// Files written whole: to a temporary name beside the target, written and flushed to disk with
// every write checked, then renamed over it, so a reader (or a full disk, or a kill) never sees
// a half-written file and the previous file survives any failure.
#pragma once

#include <string>

namespace wm {

/// UserError naming the path when any step fails (the temporary file is removed).
void writeFileAtomically(const std::string& path, const std::string& contents);

} // namespace wm
