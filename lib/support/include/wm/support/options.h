// Every setting declared once (STYLE.md 6): an options struct gets one table of Option rows —
// key (the JSON/YAML name), flag (the command-line name; empty: not a flag), help, the member
// it sets, and its check (a range or a list of choices). The CLI (apps/wmtune/option_flags.h),
// the JSON the tuner sends measurement workers (options_json.h), the YAML of `bench` and the
// generated option reference (`wmtune options --markdown`, docs/options.md) all read the
// table, so a default or a help text lives in exactly one place: the struct's initializer and
// its row.
#pragma once

#include <wm/support/error.h>
#include <wm/support/strings.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

namespace wm {

template <typename S>
using OptionMember =
    std::variant<int S::*, int64_t S::*, uint64_t S::*, double S::*, bool S::*, std::string S::*>;

template <typename S> struct Option {
  std::string key;  ///< JSON/YAML name: "min_repeat_ms"
  std::string flag; ///< command-line name: "--min-ms" (empty: not a flag)
  std::string help;
  OptionMember<S> member;
  double lo = -std::numeric_limits<double>::infinity(); ///< numbers: accepted range
  double hi = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices; ///< strings: accepted values (empty: any)

  template <typename M>
  Option(std::string k, std::string f, std::string h, M S::*m)
      : key(std::move(k)), flag(std::move(f)), help(std::move(h)), member(m) {}
  template <typename M>
  Option(std::string k, std::string f, std::string h, M S::*m, double min, double max)
      : key(std::move(k)), flag(std::move(f)), help(std::move(h)), member(m), lo(min), hi(max) {}
  Option(std::string k, std::string f, std::string h, std::string S::*m, std::vector<std::string> c)
      : key(std::move(k)), flag(std::move(f)), help(std::move(h)), member(m),
        choices(std::move(c)) {}
};

template <typename S> using OptionTable = std::vector<Option<S>>;

/// "int", "float", "bool" or "string".
template <typename S> const char* optionTypeName(const Option<S>& o) {
  switch (o.member.index()) {
  case 0:
  case 1:
  case 2: return "int";
  case 3: return "float";
  case 4: return "bool";
  default: return "string";
  }
}

/// The option's value in s as text (what the docs print as the default).
template <typename S> std::string optionValueString(const S& s, const Option<S>& o) {
  std::ostringstream os;
  std::visit(
      [&](auto m) {
        using T = std::decay_t<decltype(s.*m)>;
        if constexpr (std::is_same_v<T, bool>)
          os << (s.*m ? "true" : "false");
        else
          os << s.*m;
      },
      o.member);
  return os.str();
}

/// Checks a value against the option's range or choices; UserError naming `where` otherwise.
template <typename S>
void checkOptionValue(const Option<S>& o, double v, const std::string& where) {
  if (!(v >= o.lo && v <= o.hi)) {
    std::ostringstream os;
    os << where << ": " << v << " is out of range";
    if (std::isfinite(o.lo) && std::isfinite(o.hi))
      os << " [" << o.lo << ", " << o.hi << "]";
    else if (std::isfinite(o.lo))
      os << " (at least " << o.lo << ")";
    else if (std::isfinite(o.hi))
      os << " (at most " << o.hi << ")";
    throw UserError(os.str());
  }
}
template <typename S>
void checkOptionChoice(const Option<S>& o, const std::string& v, const std::string& where) {
  if (o.choices.empty()) return;
  for (auto& c : o.choices)
    if (c == v) return;
  throw UserError(where + ": '" + v + "' is not one of " + join(o.choices, ", "));
}

/// Sets the option from text (a YAML scalar, a flag value); UserError naming `where` when the
/// text is not a value of the option's type or fails its check.
template <typename S>
void setOptionFromString(S& s, const Option<S>& o, const std::string& text,
                         const std::string& where) {
  std::visit(
      [&](auto m) {
        using T = std::decay_t<decltype(s.*m)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (text == "true" || text == "1")
            s.*m = true;
          else if (text == "false" || text == "0")
            s.*m = false;
          else
            throw UserError(where + ": '" + text + "' is not true or false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          checkOptionChoice(o, text, where);
          s.*m = text;
        } else if constexpr (std::is_same_v<T, double>) {
          auto v = parseDouble(text);
          if (!v) throw UserError(where + ": '" + text + "' is not a number");
          checkOptionValue(o, *v, where);
          s.*m = *v;
        } else {
          auto v = parseInt(text);
          if (!v) throw UserError(where + ": '" + text + "' is not an integer");
          if constexpr (std::is_unsigned_v<T>) {
            if (*v < 0) throw UserError(where + ": '" + text + "' is negative");
          } else if (*v > static_cast<int64_t>(std::numeric_limits<T>::max()) ||
                     *v < static_cast<int64_t>(std::numeric_limits<T>::min())) {
            throw UserError(where + ": '" + text + "' is out of range");
          }
          checkOptionValue(o, static_cast<double>(*v), where);
          s.*m = static_cast<T>(*v);
        }
      },
      o.member);
}

/// The row with this key, or nullptr.
template <typename S> const Option<S>* findOption(const OptionTable<S>& t, const std::string& key) {
  for (auto& o : t)
    if (o.key == key) return &o;
  return nullptr;
}

/// A Markdown table of the options (key, flag, type, default, help) with s's values as defaults.
template <typename S> std::string optionsMarkdown(const S& s, const OptionTable<S>& t) {
  std::ostringstream os;
  os << "| key | flag | type | default | help |\n| --- | --- | --- | --- | --- |\n";
  for (auto& o : t) {
    std::string def = optionValueString(s, o);
    os << "| `" << o.key << "` | " << (o.flag.empty() ? std::string("—") : "`" + o.flag + "`")
       << " | " << optionTypeName(o) << " | "
       << (def.empty() ? std::string("\"\"") : "`" + def + "`") << " | " << o.help;
    if (!o.choices.empty()) os << " (" << join(o.choices, ", ") << ")";
    os << " |\n";
  }
  return os.str();
}

} // namespace wm
