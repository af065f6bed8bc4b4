// Option tables: text and JSON set exactly the declared members, with their checks, and errors
// name the key. Integers and JSON from input are bounded (parseInt, jsonDepth, SizeMath).
#include <wm/runtime/measure.h>
#include <wm/support/int_math.h>
#include <wm/support/options.h>
#include <wm/support/options_json.h>
#include <wm/support/strings.h>

#include <catch2/catch.hpp>

#include <set>

using namespace wm;

TEST_CASE("option tables read and write their structs", "[options]") {
  const auto& t = runtime::measureOptionTable();
  runtime::MeasureOptions o;
  setOptionFromString(o, *findOption(t, "min_repeat_ms"), "12.5", "x");
  CHECK(o.minRepeatMs == 12.5);
  setOptionFromString(o, *findOption(t, "flush_cache"), "true", "x");
  CHECK(o.flushCache);
  CHECK_THROWS_WITH(setOptionFromString(o, *findOption(t, "repeat"), "0", "bench.yaml:3: repeat"),
                    Catch::Contains("bench.yaml:3: repeat: 0 is out of range"));
  CHECK_THROWS_WITH(setOptionFromString(o, *findOption(t, "warmup"), "two", "w"),
                    Catch::Contains("not an integer"));

  auto j = optionsToJson(o, t);
  runtime::MeasureOptions back;
  optionsFromJson(back, t, j, "json");
  CHECK(optionsToJson(back, t) == j);
  CHECK(back.minRepeatMs == 12.5);
  CHECK_THROWS_WITH(optionsFromJson(back, t, nlohmann::json{{"bogus", 1}}, "cfg"),
                    Catch::Contains("cfg: unknown option 'bogus'"));
  CHECK_THROWS_WITH(optionsFromJson(back, t, nlohmann::json{{"warmup", 1.5}}, "cfg"),
                    Catch::Contains("not an integer"));

  // Every key is unique, every flag starts with --.
  std::set<std::string> keys;
  for (auto& row : t) {
    CHECK(keys.insert(row.key).second);
    CHECK(row.flag.rfind("--", 0) == 0);
  }
}

TEST_CASE("integers and JSON depth from input are bounded, never wrapped", "[support]") {
  CHECK(wm::parseInt("9223372036854775807") == INT64_MAX);
  CHECK_FALSE(wm::parseInt("9223372036854775808").has_value());
  CHECK_FALSE(wm::parseInt("9777777777777777762").has_value()); // a fuzz finding
  CHECK(wm::parseInt("-42") == -42);
  CHECK(wm::jsonDepth(R"([["SP", 2, [1, 2]], {"a": "[[[["}])") == 3); // brackets in strings
  CHECK(wm::jsonDepth(std::string(10000, '[')) == 10000);
  int64_t r = 0;
  CHECK_FALSE(wm::checkedMul(int64_t(1) << 32, int64_t(1) << 32, &r));
  wm::SizeMath m;
  m.add(m.mul(int64_t(1) << 40, int64_t(1) << 30), 1);
  CHECK_FALSE(m.ok());
}
