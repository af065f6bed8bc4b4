// Option tables (options.h) to and from JSON objects. A separate header so that only the files
// that speak JSON pay for nlohmann/json.
#pragma once

#include <wm/support/options.h>

#include <nlohmann/json.hpp>

namespace wm {

/// Every option of the table, by key.
template <typename S> nlohmann::json optionsToJson(const S& s, const OptionTable<S>& t) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& o : t) std::visit([&](auto m) { j[o.key] = s.*m; }, o.member);
  return j;
}

/// Sets the options whose keys j has (others keep their values). Unknown keys and values of
/// the wrong type are UserErrors naming `where` and the key.
template <typename S>
void optionsFromJson(S& s, const OptionTable<S>& t, const nlohmann::json& j,
                     const std::string& where) {
  if (!j.is_object()) throw UserError(where + ": expected an object of options");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const Option<S>* o = findOption(t, it.key());
    if (!o) throw UserError(where + ": unknown option '" + it.key() + "'");
    const nlohmann::json& v = it.value();
    std::string at = where + ": " + it.key();
    std::string text;
    if (v.is_string())
      text = v.get<std::string>();
    else if (v.is_boolean())
      text = v.get<bool>() ? "true" : "false";
    else if (v.is_number_integer() || v.is_number_unsigned())
      text = v.dump();
    else if (v.is_number_float()) {
      if (o->member.index() != 3) throw UserError(at + ": " + v.dump() + " is not an integer");
      double d = v.get<double>();
      checkOptionValue(*o, d, at);
      s.*std::get<3>(o->member) = d;
      continue;
    } else
      throw UserError(at + ": " + v.dump() + " is not a value of type " + optionTypeName(*o));
    if (v.is_string() && o->member.index() != 5)
      throw UserError(at + ": expected a " + std::string(optionTypeName(*o)) + ", got a string");
    setOptionFromString(s, *o, text, at);
  }
}

} // namespace wm
