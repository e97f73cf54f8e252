// Read-side helpers over a validated results JSON, shared by compare and report.
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace noeira {

// Timer names, most precise first: the order in which "auto" picks one.
inline constexpr std::array<std::string_view, 3> kTimersByPreference = {"device", "event", "wall"};

// Our variants, then the twin's modes: the column order of every table.
inline constexpr std::array<std::string_view, 7> kVariantOrder = {
    "eager", "graph", "bf16", "bf16+graph", "twin:eager", "twin:compiled", "twin:graphs"};

// Every run's per-step samples for `timer`, pooled across seeds (empty when none).
std::vector<double> pooled_samples(const nlohmann::json& variant, std::string_view timer);

// variant.summary.timers[timer], or nullptr when not measured.
const nlohmann::json* summary_timer(const nlohmann::json& variant, std::string_view timer);

// The first timer in kTimersByPreference with a summary, or "" when none.
std::string best_summary_timer(const nlohmann::json& variant);

// The non-null runs[].<metric> values (e.g. "test_top1"), one per seed.
std::vector<double> seed_scores(const nlohmann::json& variant, std::string_view metric);

// A variant that ran: available, without error, and started (not a stopped run's variant
// whose seeds are all pending).
bool variant_ran(const nlohmann::json& variant);

// What the numbers were measured on: "gpu <device name>" or "cpu <cpu model>".
std::string measured_on(const nlohmann::json& results);

// A results value as a string ("" for null or missing), for labels.
std::string text_of(const nlohmann::json& obj, std::string_view key);

}  // namespace noeira
