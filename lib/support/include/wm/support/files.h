// Files written whole: to a temporary name beside the target, written and flushed to disk with
// every write checked, then renamed over it, so a reader (or a full disk, or a kill) never sees
// a half-written file and the previous file survives any failure. A target that is not a
// regular file (a device such as /dev/stdout or /dev/full, a FIFO) is written in place, every
// write checked; a symbolic link is followed (the file it names is replaced, not the link).
#pragma once

#include <string>

namespace wm {

/// UserError naming the path when any step fails (the temporary file is removed).
void writeFileAtomically(const std::string& path, const std::string& contents);

/// Before long work: UserError naming the path (and `what`, e.g. "--json") unless the file can
/// be written later — its directory exists and takes a new file, or an existing non-regular
/// file opens for writing. Writes nothing that stays behind.
void checkWritable(const std::string& path, const std::string& what);

/// Files wmtune only reads (logs, models, .npy, checkpoints) must be regular: a FIFO would hang
/// the reader, a device such as /dev/zero never end. UserError naming the path when it exists
/// and is not a regular file; returns whether it exists.
bool requireRegularFile(const std::string& path);

/// The path of this process's executable (/proc/self/exe): workers and bench cells run it.
std::string selfExecutable();

/// Flushes stdout; UserError when anything written to it was lost (a full disk, a closed pipe).
void checkStdout();

} // namespace wm
