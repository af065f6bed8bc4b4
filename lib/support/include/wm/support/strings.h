// Small string helpers shared by the parsers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wm {

std::vector<std::string> split(std::string_view s, char sep);
std::string trim(std::string_view s);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
/// Whole-string parse; nullopt on anything else (sign, spaces, overflow included).
std::optional<int64_t> parseInt(std::string_view s);
std::optional<double> parseDouble(std::string_view s);
/// 1234567 -> "1,234,567".
std::string withThousands(int64_t v);

/// The deepest nesting of [ and { in JSON text (outside strings). Parsers recurse once per
/// level: input is refused above kMaxJsonDepth before it reaches one.
int jsonDepth(std::string_view text);
inline constexpr int kMaxJsonDepth = 64;

} // namespace wm
