// Shared by the fuzz targets (fuzz_*.cpp). Each target defines LLVMFuzzerTestOneInput and feeds
// the bytes through one input path of wmtune the way a command would. A user error (UserError:
// the input is bad and the message says so) is the expected outcome for most inputs; anything
// else — an internal error (a bug: exit 3 in the CLI), another exception, a wrong answer, a
// signal, a sanitizer report — is a finding and aborts.
//
// Built twice: with libFuzzer (-DWM_FUZZ=ON under clang: wm_fuzz_<name>, run for minutes to
// find inputs) and with replay_main.cpp (wm_fuzz_<name>_replay, every build: CTest replays the
// checked-in corpus test/fuzz/corpus/<name>/).
#pragma once

#include <wm/support/error.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace wm::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

/// Runs f; a UserError is fine, anything else is a finding.
template <typename F> void guarded(F&& f) {
  try {
    f();
  } catch (const UserError&) {
  } catch (const InternalError& e) {
    finding(std::string("internal error: ") + e.what());
  } catch (const std::exception& e) {
    finding(std::string("exception: ") + e.what());
  }
}

/// Work limit for interpreting what an input describes (tiny shapes only).
inline constexpr double kMaxInterpretWork = 2e5;

} // namespace wm::fuzz
