#include "nn/json_input.h"

#include <string>

namespace noeira {

Result<nlohmann::json> parse_json_input(std::string_view text, int max_depth) {
  bool too_deep = false;
  // Returning false at a container that starts too deep drops it whole: the parser goes
  // on over its text (iteratively) without building the deep value.
  auto limit_depth = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    const bool starts = event == nlohmann::json::parse_event_t::object_start ||
                        event == nlohmann::json::parse_event_t::array_start;
    if (starts && depth >= max_depth) too_deep = true;
    return !too_deep;
  };
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(text.begin(), text.end(), limit_depth);
  } catch (const nlohmann::json::parse_error& e) {
    return make_error("not valid JSON at byte " + std::to_string(e.byte) + " (" + e.what() + ")");
  } catch (const nlohmann::json::exception& e) {  // out_of_range: a number too large
    return make_error(std::string("not usable JSON (") + e.what() + ")");
  }
  if (too_deep)
    return make_error("JSON nested deeper than " + std::to_string(max_depth) + " levels");
  return value;
}

}  // namespace noeira
