#include "cli/context.hpp"
#include "core/error.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

namespace dlock::cli {

namespace {

struct PingArguments {
  bool json = false;
};

int run_ping(const PingArguments &args, Context &context) {
  Settings settings = context.settings();
  auto backend = open_backend(settings);
  backend::PingResult result = backend->ping();
  // Multi-node backends judge by quorum; otherwise every node must answer.
  bool healthy = result.quorum ? *result.quorum
                               : !result.nodes.empty() &&
                                     std::all_of(result.nodes.begin(), result.nodes.end(),
                                                 [](const auto &node) { return node.reachable && node.error.empty(); });
  if (args.json) {
    nlohmann::ordered_json doc;
    doc["backend"] = settings.backend.url.redacted();
    doc["ok"] = healthy;
    doc["quorum"] = result.quorum ? nlohmann::ordered_json(*result.quorum) : nlohmann::ordered_json(nullptr);
    doc["detail"] = result.detail;
    doc["nodes"] = nlohmann::ordered_json::array();
    for (const auto &node : result.nodes)
      doc["nodes"].push_back({{"address", node.address},
                              {"reachable", node.reachable},
                              {"version", node.version},
                              {"rtt_ms", std::chrono::duration<double, std::milli>(node.round_trip).count()},
                              {"error", node.error}});
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << fmt::format("backend:  {}\n", settings.backend.url.redacted());
    for (const auto &node : result.nodes)
      std::cout << fmt::format("node:     {}  {}  {}  rtt {:.2f} ms{}\n", node.address,
                               node.reachable ? "reachable" : "UNREACHABLE", node.version,
                               std::chrono::duration<double, std::milli>(node.round_trip).count(),
                               node.error.empty() ? "" : "  " + node.error);
    if (result.quorum) std::cout << fmt::format("quorum:   {}\n", *result.quorum ? "yes" : "NO");
    if (!result.detail.empty()) std::cout << fmt::format("detail:   {}\n", result.detail);
  }
  return healthy ? 0 : to_int(ExitCode::unavailable);
}

} // namespace

void setup_ping(CLI::App &sub, Context &context) {
  auto args = std::make_shared<PingArguments>();
  sub.add_flag("--json", args->json, "One JSON document");
  sub.callback([args, &context] { context.action = [args, &context] { return run_ping(*args, context); }; });
}

} // namespace dlock::cli
