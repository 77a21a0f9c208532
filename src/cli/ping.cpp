#include "cli/context.hpp"
#include "cli/format.hpp"
#include "core/error.hpp"

#include "cli/cli11.hpp"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/streams.hpp"
#include <algorithm>

namespace dlock::cli {

namespace {

struct PingArguments {
  bool json = false;
};

int run_ping(const PingArguments &args, Context &context) {
  Settings settings;
  backend::PingResult result;
  with_json_errors(args.json, [&] {
    settings = context.settings();
    result = open_backend(settings)->ping();
    return 0;
  });
  // Multi-node backends judge by quorum; otherwise every node must answer.
  bool healthy = result.quorum ? *result.quorum
                               : !result.nodes.empty() &&
                                     std::all_of(result.nodes.begin(), result.nodes.end(),
                                                 [](const auto &node) { return node.reachable && node.error.empty(); });
  // Healthy with nodes lost (Redlock, ZooKeeper, etcd): locks still work,
  // so the exit stays 0, but the state says so.
  std::size_t unusable =
      static_cast<std::size_t>(std::count_if(result.nodes.begin(), result.nodes.end(),
                                             [](const auto &node) { return !node.reachable || !node.error.empty(); }));
  const bool degraded = healthy && unusable > 0;
  auto rtt_ms = [](const auto &node) { return std::chrono::duration<double, std::milli>(node.round_trip).count(); };
  if (args.json) {
    nlohmann::ordered_json doc;
    doc["backend"] = settings.backend.url.redacted();
    doc["ok"] = healthy;
    doc["degraded"] = degraded;
    doc["quorum"] = result.quorum ? nlohmann::ordered_json(*result.quorum) : nlohmann::ordered_json(nullptr);
    doc["detail"] = result.detail;
    doc["nodes"] = nlohmann::ordered_json::array();
    for (const auto &node : result.nodes)
      doc["nodes"].push_back({{"address", node.address},
                              {"reachable", node.reachable},
                              {"version", node.version},
                              {"rtt_ms", node.reachable ? nlohmann::ordered_json(rtt_ms(node)) : nullptr},
                              {"error", node.error}});
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << fmt::format("backend:  {}\n", settings.backend.url.redacted());
    for (const auto &node : result.nodes)
      std::cout << fmt::format("node:     {}  {}{}{}{}\n", node.address, node.reachable ? "reachable" : "UNREACHABLE",
                               node.version.empty() ? "" : "  " + node.version,
                               node.reachable ? fmt::format("  rtt {:.2f} ms", rtt_ms(node)) : "",
                               node.error.empty() ? "" : "  " + node.error);
    if (result.quorum) std::cout << fmt::format("quorum:   {}\n", *result.quorum ? "yes" : "NO");
    if (degraded)
      std::cout << fmt::format("state:    degraded: {} of {} nodes unusable; locks still work\n", unusable,
                               result.nodes.size());
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
