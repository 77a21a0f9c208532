#include "cli/doctor.hpp"

#include "backend/registry.hpp"
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

struct DoctorArguments {
  bool json = false;
  std::optional<std::string> ttl;
};

const char *severity_word(backend::Severity severity) {
  switch (severity) {
  case backend::Severity::ok:
    return "ok";
  case backend::Severity::warning:
    return "warning";
  case backend::Severity::unsafe:
    return "unsafe";
  }
  return "unsafe";
}

// A backend that refuses its settings before it talks to anyone (an unsafe
// lock directory, a Redlock URL with two nodes) says why in one sentence,
// its fix after the last "; " where it gives one.
backend::Finding refusal_finding(const std::string &scheme, const std::string &message) {
  backend::Finding finding{scheme + ".settings", backend::Severity::unsafe, message, ""};
  if (auto cut = message.rfind("; "); cut != std::string::npos) {
    finding.found = message.substr(0, cut);
    finding.fix = message.substr(cut + 2);
  }
  return finding;
}

int run_doctor(const DoctorArguments &args, Context &context) {
  Settings settings;
  backend::DiagnoseOptions options;
  std::vector<backend::Finding> findings;
  int status = with_json_errors(args.json, [&] {
    settings = context.settings();
    options.ttl = resolve_ttl(args.ttl, settings);
    // An unknown scheme is a plain configuration error (78), not a check.
    std::string scheme(backend::find_backend(settings.backend.url.scheme).schemes.front());
    std::unique_ptr<backend::Backend> backend;
    try {
      backend = open_backend(settings);
    } catch (const ConfigError &refused) {
      findings.push_back(refusal_finding(scheme, refused.what()));
      return 0;
    }
    findings = backend->diagnose(options);
    return 0;
  });
  if (status != 0) return status;
  auto worst = backend::Severity::ok;
  for (auto &finding : findings) {
    worst = std::max(worst, finding.severity);
    // One line each, whatever a server put in its messages.
    for (std::string *text : {&finding.found, &finding.fix})
      std::replace_if(
          text->begin(), text->end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  }
  const char *verdict = worst == backend::Severity::unsafe    ? "unsafe"
                        : worst == backend::Severity::warning ? "ok with warnings"
                                                              : "ok";
  if (args.json) {
    nlohmann::ordered_json doc;
    doc["backend"] = settings.backend.url.redacted();
    doc["ttl_ms"] = options.ttl.count();
    doc["checks"] = nlohmann::ordered_json::array();
    for (const auto &finding : findings)
      doc["checks"].push_back({{"id", finding.check},
                               {"severity", severity_word(finding.severity)},
                               {"found", finding.found},
                               {"fix", finding.fix}});
    doc["verdict"] = severity_word(worst);
    std::cout << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  } else {
    std::cout << fmt::format("backend: {} (for --ttl {})\n", settings.backend.url.redacted(),
                             format_duration(options.ttl));
    for (const auto &finding : findings)
      std::cout << fmt::format(
          "{:<8} {}  {}{}\n", severity_word(finding.severity), finding.check, finding.found,
          finding.fix.empty() || finding.severity == backend::Severity::ok ? "" : "  fix: " + finding.fix);
    std::cout << fmt::format("verdict: {}\n", verdict);
  }
  return worst == backend::Severity::unsafe ? to_int(ExitCode::config) : 0;
}

} // namespace

void setup_doctor(CLI::App &sub, Context &context) {
  auto args = std::make_shared<DoctorArguments>();
  sub.add_option("-t,--ttl", args->ttl, "The lease to check the backend for [default: the config's ttl, else 30s]")
      ->type_name("D");
  sub.add_flag("--json", args->json, "One JSON document");
  sub.callback([args, &context] { context.action = [args, &context] { return run_doctor(*args, context); }; });
}

} // namespace dlock::cli
