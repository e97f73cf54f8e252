#include "nn/training/vocab_json.h"

#include <string>

namespace noeira {

nlohmann::json vocab_to_json(const std::vector<char>& vocab) {
  nlohmann::json list = nlohmann::json::array();
  for (char c : vocab) list.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return list;
}

Result<std::vector<char>> vocab_from_json(const nlohmann::json& list) {
  if (!list.is_array() || list.empty())
    return make_error(std::string("the vocabulary must be a non-empty list of byte values, "
                                  "found ") + (list.is_array() ? "an empty list" : list.type_name()));
  std::vector<char> vocab;
  int previous = -1;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& v = list[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 255)
      return make_error("the vocabulary's entry " + std::to_string(i) + " is " + v.dump() +
                        ", not a byte value (an integer 0-255)");
    const int b = v.get<int>();
    if (b <= previous)
      return make_error("the vocabulary's entry " + std::to_string(i) + " (" +
                        std::to_string(b) + ") does not follow " + std::to_string(previous) +
                        ": its byte values must be strictly ascending");
    vocab.push_back(static_cast<char>(b));
    previous = b;
  }
  return vocab;
}

}  // namespace noeira
