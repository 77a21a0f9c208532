#include "cli/format.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

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

json status_json(const backend::LockStatus &status) {
  json doc;
  doc["name"] = status.name;
  doc["held"] = status.held;
  if (status.holder) {
    const HolderInfo &h = *status.holder;
    doc["holder"] = {{"host", h.host},
                     {"pid", h.pid},
                     {"user", h.user},
                     {"command", h.command},
                     {"since", h.since.time_since_epoch().count() ? json(format_utc(h.since)) : json(nullptr)}};
  } else {
    doc["holder"] = nullptr;
  }
  doc["fence"] = status.fence ? json(*status.fence) : json(nullptr);
  doc["ttl_left_ms"] = status.time_left ? json(status.time_left->count()) : json(nullptr);
  doc["waiters"] = status.waiters ? json(*status.waiters) : json(nullptr);
  doc["detail"] = status.detail.empty() ? json(nullptr) : json(status.detail);
  return doc;
}

std::string status_text(const backend::LockStatus &status) {
  std::string out = fmt::format("lock:     {}\nstate:    {}\n", status.name, status.held ? "held" : "free");
  if (status.holder) {
    const HolderInfo &h = *status.holder;
    out += fmt::format("holder:   pid {} on {}{}\n", h.pid, h.host, h.user.empty() ? "" : " as " + h.user);
    if (!h.command.empty()) out += fmt::format("command:  {}\n", h.command);
    if (h.since.time_since_epoch().count())
      out += fmt::format("since:    {} ({})\n", format_utc(h.since), age(h.since));
  }
  if (status.time_left) out += fmt::format("lease:    {} left\n", format_duration(*status.time_left));
  if (status.fence) out += fmt::format("fence:    {}{}\n", *status.fence, status.held ? "" : " (last holder's)");
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
    if (lock.holder) {
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
