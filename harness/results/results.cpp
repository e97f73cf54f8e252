#include "harness/results/results.h"

#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "nn/atomic_file.h"
#include "nn/json_input.h"

namespace noeira {

Result<nlohmann::json> read_results(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return make_error(name + ": no such results file");
  if (std::filesystem::is_directory(path, ec))
    return make_error(name + ": is a directory, not a results file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(name + ": cannot open the results file (check its permissions)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(name + ": read error");

  Result<nlohmann::json> results = parse_json_input(text.str());
  if (!results)
    return make_error(name + ": " + results.error().message +
                      ": is it a truncated or hand-edited results file?");
  if (Status s = validate_results(*results); !s) return make_error(name + ": " + s.error().message);
  return results;
}

Result<ResultsRecord> read_results_record(const std::filesystem::path& path) {
  Result<nlohmann::json> j = read_results(path);
  if (!j) return j.error();
  try {
    return j->get<ResultsRecord>();
  } catch (const nlohmann::json::exception& e) {  // validation should leave nothing to throw
    return make_error(path.string() + ": " + e.what());
  }
}

std::string utc_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

Status write_results(const std::filesystem::path& path, const nlohmann::json& results) {
  if (Status s = validate_results(results); !s)
    return make_error("refusing to write results file " + path.string() +
                      " that breaks the schema: " + s.error().message);
  // Invalid UTF-8 in a string (an odd hostname, say) is replaced rather than thrown on.
  const std::string text =
      results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return write_file_atomically(path, text, "results file");
}

Status write_results(const std::filesystem::path& path, const ResultsRecord& results) {
  return write_results(path, nlohmann::json(results));
}

}  // namespace noeira
