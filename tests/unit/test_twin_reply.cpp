// The twin's reply (harness/twin/twin_reply.h): whatever its stdout holds, a failure with its
// reason or a result every reader of it can use. Seen while writing fuzz/twin_reply.cpp:
// a field of another type threw json's type_error in the harness, an event-timed reply
// without wall_ms_per_step read a missing key of a const object, and losses holding
// strings broke the results schema, so the whole results file was refused.
#include <catch2/catch.hpp>

#include "harness/results/results.h"
#include "harness/twin/twin_reply.h"
#include "harness/twin/twin_runs.h"

using namespace noeira;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {

const std::string kHint = " (log: twin.log)";

TwinOutcome reply(const std::string& out) {
  std::optional<TwinOutcome> o = parse_twin_reply(out, kHint);
  REQUIRE(o.has_value());
  return *o;
}

std::string failure(const std::string& out) {
  const TwinOutcome o = reply(out);
  CHECK_FALSE(o.ok);
  CHECK_THAT(o.reason, StartsWith("twin failed: ") && EndsWith(kHint));
  return o.reason;
}

}  // namespace

TEST_CASE("twin reply: no JSON object on stdout is for the caller to explain", "[twin]") {
  CHECK_FALSE(parse_twin_reply("", kHint).has_value());
  CHECK_FALSE(parse_twin_reply("Traceback (most recent call last): boom", kHint).has_value());
  CHECK_FALSE(parse_twin_reply("} {", kHint).has_value());
  CHECK_FALSE(parse_twin_reply("[1, 2]", kHint).has_value());
  CHECK_FALSE(parse_twin_reply("{" + std::string(1000, '[') + "}", kHint).has_value());
}

TEST_CASE("twin reply: ok, unavailable and failed, as the twin writes them", "[twin]") {
  const TwinOutcome ran = reply(
      "log line\n{\"ok\": true, \"available\": true, \"timer\": \"wall\", \"step_times_ms\": "
      "[1.5, 2.5], \"losses\": [2.3, null], \"steps\": 2, \"test_top1\": null}\n");
  CHECK(ran.ok);
  CHECK(ran.available);
  CHECK(ran.result.at("losses").size() == 2);

  const TwinOutcome unavailable = reply(R"({"ok": true, "available": false,
      "unavailable_reason": "torch.compile needs torch>=2.0"})");
  CHECK(unavailable.ok);
  CHECK_FALSE(unavailable.available);
  CHECK(unavailable.reason == "torch.compile needs torch>=2.0");

  CHECK_THAT(failure(R"({"ok": false, "error": "no such data set"})"),
             Contains("twin failed: no such data set"));
  CHECK_THAT(failure(R"({"ok": false, "error": 42})"), Contains("unknown error"));
}

TEST_CASE("twin reply: a field of another type is a failed twin naming the field", "[twin]") {
  CHECK_THAT(failure(R"({"ok": "yes"})"), Contains("no 'ok' flag"));
  CHECK_THAT(failure(R"({"ok": true, "available": 1})"), Contains("'available'"));
  CHECK_THAT(failure(R"({"ok": true, "available": true, "losses": []})"),
             Contains("lacks 'step_times_ms'"));
  CHECK_THAT(failure(R"({"ok": true, "available": true, "step_times_ms": [1, "2"], "losses": []})"),
             Contains("'step_times_ms' holds string"));
  CHECK_THAT(failure(R"({"ok": true, "available": true, "step_times_ms": [], "losses": ["x"]})"),
             Contains("'losses' holds string"));
  CHECK_THAT(failure(R"({"ok": true, "available": true, "step_times_ms": [], "losses": [],
                         "steps": -3})"),
             Contains("'steps'"));
  CHECK_THAT(failure(R"({"ok": true, "available": true, "step_times_ms": [], "losses": [],
                         "wall_ms_per_step": "fast"})"),
             Contains("'wall_ms_per_step'"));
  CHECK_THAT(failure(R"({"ok": true, "error": "both"})"), Contains("'error' comes with ok true"));
}

TEST_CASE("twin_run: any JSON gives a run of the results schema", "[twin][results]") {
  // An event-timed reply without wall_ms_per_step read a missing key of a const object.
  for (const char* text : {R"({"timer": "event", "step_times_ms": [1.0]})",
                           R"({"timer": 5, "losses": ["x", 1.0, null], "steps": 2.5})", "[]",
                           "null"}) {
    const nlohmann::json run = twin_run(read_twin_reply(nlohmann::json::parse(text)), 7);
    CHECK(run.at("seed") == 7);
    CHECK(run.at("steps").is_number_integer());
    for (const auto& v : run.at("losses")) CHECK((v.is_number() || v.is_null()));
  }
}
