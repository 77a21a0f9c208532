#include "cli/format.hpp"

#include "core/error.hpp"
#include "runner/runner.hpp"

#include <fmt/format.h>

#include "cli/streams.hpp"
#include <algorithm>

namespace dlock::cli {

using json = nlohmann::ordered_json;

std::string age(std::chrono::system_clock::time_point since) {
  auto elapsed = std::chrono::duration_cast<Millis>(std::chrono::system_clock::now() - since);
  return format_duration(std::max(elapsed, Millis(0))) + " ago";
}

LeaseFigures lease_figures(std::chrono::steady_clock::time_point t0, Millis granted, std::optional<Millis> window,
                           std::chrono::system_clock::time_point now_wall,
                           std::chrono::steady_clock::time_point now_steady) {
  // A t0 ahead of our clock could only come from a keeper in another time
  // namespace; the lease then counts from now, not from a future instant.
  t0 = std::min(t0, now_steady);
  auto t0_wall = now_wall - std::chrono::duration_cast<std::chrono::system_clock::duration>(now_steady - t0);
  auto left_of = [&](Millis length) {
    return std::max(Millis(0), std::chrono::floor<Millis>(t0 + length - now_steady));
  };
  Millis promised = window ? std::min(granted, *window) : granted;
  LeaseFigures figures{left_of(promised), t0_wall + promised, std::nullopt, std::nullopt};
  if (window) {
    figures.window_left = left_of(*window);
    figures.renew_by = t0_wall + *window;
  }
  return figures;
}

void add_lease_figures(json &doc, std::chrono::steady_clock::time_point t0, Millis granted,
                       std::optional<Millis> window) {
  auto now_wall = std::chrono::system_clock::now();
  LeaseFigures figures = lease_figures(t0, granted, window, now_wall, std::chrono::steady_clock::now());
  doc["ttl_ms"] = figures.ttl_left.count();
  doc["expires_at"] = format_utc(figures.expires_at);
  if (figures.window_left) doc["keeper_window_ms"] = figures.window_left->count();
  if (figures.renew_by) doc["renew_by"] = format_utc(*figures.renew_by);
}

namespace {

json holder_json(const HolderInfo &h) {
  return {{"host", h.host},
          {"pid", h.pid},
          {"user", h.user},
          {"command", h.command},
          {"since", h.since.time_since_epoch().count() ? json(format_utc(h.since)) : json(nullptr)}};
}

template <typename T> json or_null(const std::optional<T> &value) { return value ? json(*value) : json(nullptr); }

// Every holder, the exclusive one included, as status --json's "holders".
std::vector<backend::HolderStatus> all_holders(const backend::LockStatus &status) {
  std::vector<backend::HolderStatus> holders = status.holders;
  if (status.holder) holders.insert(holders.begin(), {*status.holder, status.fence, status.time_left, std::nullopt});
  return holders;
}

std::string describe(const HolderInfo &h) {
  return fmt::format("pid {} on {}{}", h.pid, h.host, h.user.empty() ? "" : " as " + h.user);
}

} // namespace

json status_json(const backend::LockStatus &status) {
  json doc;
  doc["name"] = status.name;
  doc["held"] = status.held;
  doc["mode"] = backend::to_string(status.mode);
  doc["limit"] = or_null(status.limit);
  doc["holder"] = status.holder ? holder_json(*status.holder) : json(nullptr);
  doc["fence"] = or_null(status.fence);
  doc["ttl_left_ms"] = status.time_left ? json(status.time_left->count()) : json(nullptr);
  doc["waiters"] = or_null(status.waiters);
  doc["detail"] = status.detail.empty() ? json(nullptr) : json(status.detail);
  json holders = json::array();
  for (const auto &h : all_holders(status)) {
    json entry = holder_json(h.info);
    entry["fence"] = or_null(h.fence);
    entry["ttl_left_ms"] = h.time_left ? json(h.time_left->count()) : json(nullptr);
    entry["slot"] = or_null(h.slot);
    holders.push_back(std::move(entry));
  }
  doc["holders"] = std::move(holders);
  return doc;
}

std::string status_text(const backend::LockStatus &status) {
  std::string out = fmt::format("lock:     {}\nstate:    {}\n", status.name, status.held ? "held" : "free");
  if (status.holder) {
    const HolderInfo &h = *status.holder;
    out += fmt::format("holder:   {}\n", describe(h));
    if (!h.command.empty()) out += fmt::format("command:  {}\n", h.command);
    if (h.since.time_since_epoch().count())
      out += fmt::format("since:    {} ({})\n", format_utc(h.since), age(h.since));
  }
  if (status.time_left) out += fmt::format("lease:    {} left\n", format_duration(*status.time_left));
  if (status.fence) out += fmt::format("fence:    {}{}\n", *status.fence, status.held ? "" : " (last holder's)");
  if (status.mode != backend::HoldMode::exclusive) {
    out += fmt::format("mode:     {}{}\n", backend::to_string(status.mode),
                       status.limit ? fmt::format(" (limit {})", *status.limit) : "");
    for (const auto &h : status.holders) {
      out += fmt::format("holder:   {}{}", h.slot ? fmt::format("slot {}: ", *h.slot) : "", describe(h.info));
      if (h.fence) out += fmt::format(", fence {}", *h.fence);
      if (h.info.since.time_since_epoch().count()) out += fmt::format(", since {}", age(h.info.since));
      if (!h.info.command.empty()) out += fmt::format(": {}", h.info.command);
      out += "\n";
    }
  }
  if (status.waiters) out += fmt::format("waiters:  {}\n", *status.waiters);
  if (!status.detail.empty()) out += fmt::format("where:    {}\n", status.detail);
  return out;
}

std::string list_table(const std::vector<backend::LockStatus> &locks) {
  std::size_t width = 4;
  for (const auto &lock : locks)
    width = std::max(width, lock.name.size());
  std::string out =
      fmt::format("{:<{}}  {:<28}  {:<10}  {:<9}  {}\n", "NAME", width, "HOLDER", "SINCE", "LEASE", "FENCE");
  for (const auto &lock : locks) {
    std::string holder = "?", since = "-";
    if (std::string many = runner::holders_summary(lock, false); !many.empty()) {
      holder = many;
      auto first = std::min_element(lock.holders.begin(), lock.holders.end(),
                                    [](const auto &a, const auto &b) { return a.info.since < b.info.since; });
      if (first->info.since.time_since_epoch().count()) since = age(first->info.since);
    } else if (lock.holder) {
      holder = fmt::format("{}@{}:{}", lock.holder->user, lock.holder->host, lock.holder->pid);
      if (lock.holder->since.time_since_epoch().count()) since = age(lock.holder->since);
    }
    if (holder.size() > 28) holder = holder.substr(0, 25) + "...";
    std::string lease = lock.time_left ? format_duration(*lock.time_left) : "-";
    std::string fence = lock.fence ? fmt::format("{}", *lock.fence) : "-";
    out += fmt::format("{:<{}}  {:<28}  {:<10}  {:<9}  {}\n", lock.name, width, holder, since, lease, fence);
  }
  return out;
}

int with_json_errors(bool as_json, const std::function<int()> &body) {
  try {
    return body();
  } catch (const Error &failure) {
    if (as_json)
      std::cout
          << nlohmann::ordered_json{{"error", {{"code", to_int(failure.code())}, {"message", failure.what()}}}}.dump(2)
          << std::endl;
    throw;
  }
}

} // namespace dlock::cli
