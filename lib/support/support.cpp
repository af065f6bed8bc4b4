// Implementation of the small support helpers (hash formatting, strings, logging set-up).
#include <wm/support/error.h>
#include <wm/support/hash.h>
#include <wm/support/int_math.h>
#include <wm/support/limits.h>
#include <wm/support/log.h>
#include <wm/support/strings.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace wm {

int64_t physicalMemoryBytes() {
  static const int64_t bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || size <= 0) return int64_t(1) << 40; // unknown: no tighter limit
    return static_cast<int64_t>(pages) * size;
  }();
  return bytes;
}

void limitAddressSpace(int64_t extraBytes) {
  long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  int64_t want = 0;
  if (!checkedMul(static_cast<int64_t>(pages), sysconf(_SC_PAGE_SIZE), &want) ||
      !checkedAdd(want, std::max<int64_t>(0, extraBytes), &want))
    return; // beyond int64: no useful limit
  rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) != 0) return;
  rlim_t cur = static_cast<rlim_t>(want);
  if (rl.rlim_max != RLIM_INFINITY && cur > rl.rlim_max) cur = rl.rlim_max;
  rl.rlim_cur = cur;
  setrlimit(RLIMIT_AS, &rl);
}

void checkAllocation(int64_t bytes, const std::string& what) {
  if (bytes < 0 || bytes > physicalMemoryBytes())
    WM_USER_ERROR() << what << ": needs "
                    << (bytes < 0 ? std::string("more than 2^63") : std::to_string(bytes))
                    << " bytes, more than this machine's " << physicalMemoryBytes()
                    << " bytes of memory";
}

int jsonDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

std::string hashToHex(uint64_t h) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[i] = digits[h & 15];
  return s;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::optional<int64_t> parseInt(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return std::nullopt;
  }
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, int64_t(10), &v) || __builtin_add_overflow(v, s[i] - '0', &v))
      return std::nullopt; // beyond int64
  }
  return neg ? -v : v;
}

std::optional<double> parseDouble(std::string_view s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  std::string str(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(str.c_str(), &end);
  if (errno != 0 || end != str.c_str() + str.size()) return std::nullopt;
  return v;
}

std::string withThousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it, ++n) {
    if (n && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
  }
  return v < 0 ? "-" + out : out;
}

void setupLogging(int verbosity) {
  auto logger = spdlog::stderr_color_mt("wmtune");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%^[%l]%$ %v");
  if (verbosity < 0)
    spdlog::set_level(spdlog::level::err);
  else if (verbosity == 0)
    spdlog::set_level(spdlog::level::info);
  else if (verbosity == 1)
    spdlog::set_level(spdlog::level::debug);
  else
    spdlog::set_level(spdlog::level::trace);
}

} // namespace wm
