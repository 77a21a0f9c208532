#include "core/redact.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace dlock {
namespace {

constexpr std::string_view k_hidden = "***";

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_quote(char c) { return c == '\'' || c == '"'; }

std::string lower(std::string_view text) {
  std::string out(text);
  for (char &c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

// Whether an assignment's key or an option's name names a secret.
bool names_secret(std::string_view name) {
  std::string key = lower(name);
  key.erase(0, key.find_first_not_of('-'));
  static constexpr std::array<std::string_view, 12> k_parts = {"password", "passwd",     "passphrase",  "secret",
                                                               "token",    "credential", "auth",        "apikey",
                                                               "api_key",  "api-key",    "private_key", "access_key"};
  for (std::string_view part : k_parts)
    if (key.find(part) != std::string::npos) return true;
  return key == "pass" || key == "pwd" || ends_with(key, "_pwd");
}

// The end of a value that starts at `from`: its closing quote if it is
// quoted (it may hold spaces), else the first space, '&', ';', ')' or quote.
std::size_t value_end(std::string_view line, std::size_t from) {
  if (from < line.size() && is_quote(line[from])) {
    std::size_t close = line.find(line[from], from + 1);
    return close == std::string_view::npos ? line.size() : close + 1;
  }
  std::size_t end = from;
  while (end < line.size() && !is_space(line[end]) &&
         std::string_view("&;)'\"").find(line[end]) == std::string_view::npos)
    ++end;
  return end;
}

// The key before the '=' at `equals`: letters, digits, '_', '.', '-'.
std::string_view key_before(std::string_view line, std::size_t word_start, std::size_t equals) {
  std::size_t start = equals;
  while (start > word_start) {
    char c = line[start - 1];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') break;
    --start;
  }
  return line.substr(start, equals - start);
}

std::string_view base_name(std::string_view word) {
  auto slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

bool is_mysql(std::string_view program) {
  for (std::string_view name : {"mysql", "mariadb", "mysqldump", "mariadb-dump", "mysqladmin", "mariadb-admin"})
    if (program == name) return true;
  return false;
}

enum class Next { plain, secret, after_colon };

} // namespace

std::string redact_secrets(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  Next next = Next::plain;
  bool redis_cli = false, mysql = false, curl = false;
  std::size_t i = 0;
  while (i < line.size()) {
    if (is_space(line[i])) {
      out += line[i++];
      continue;
    }
    std::size_t end = i;
    while (end < line.size() && !is_space(line[end]))
      ++end;
    // The word without the quotes or parentheses around it (a word of a
    // script given to sh -c in quotes).
    std::size_t core_start = i, core_end = end;
    while (core_start < core_end && (is_quote(line[core_start]) || line[core_start] == '('))
      ++core_start;
    while (core_end > core_start && (is_quote(line[core_end - 1]) || line[core_end - 1] == ')'))
      --core_end;
    std::string_view core = line.substr(core_start, core_end - core_start);

    if (next != Next::plain && !core.empty()) {
      // The whole value after an option that names a secret; after curl's
      // -u only what follows the colon.
      std::size_t from = core_start, to = core_end;
      if (next == Next::secret && is_quote(line[i])) {
        from = i;
        to = value_end(line, i);
      } else if (next == Next::after_colon) {
        auto colon = core.find(':');
        from = colon == std::string_view::npos ? core_end : core_start + colon + 1;
      }
      out.append(line.substr(i, from - i));
      if (to > from) out += k_hidden;
      i = to;
      next = Next::plain;
      continue;
    }

    // What this word says about the next one.
    std::string program = lower(base_name(core));
    redis_cli = redis_cli || program == "redis-cli";
    mysql = mysql || is_mysql(program);
    curl = curl || program == "curl";
    bool option = core.size() > 1 && core[0] == '-';
    bool assigns = core.find('=') != std::string_view::npos;
    if (option && !assigns && names_secret(core)) next = Next::secret;
    if (redis_cli && core == "-a") next = Next::secret;
    if (curl && (core == "-u" || core == "--user")) next = Next::after_colon;
    if (core == "Bearer" || core == "bearer" || core == "Basic" || core == "basic") next = Next::secret;
    if (mysql && core.size() > 2 && core.substr(0, 2) == "-p" && !assigns) {
      out.append(line.substr(i, core_start + 2 - i));
      out += k_hidden;
      out.append(line.substr(core_end, end - core_end));
      i = end;
      continue;
    }
    bool curl_user = curl && (core.substr(0, 7) == "--user=");

    // Within the word: URL userinfo and assignments of secrets.
    std::size_t at = i;
    while (at < end) {
      if (line.compare(at, 3, "://") == 0) {
        std::size_t authority = at + 3, stop = authority;
        while (stop < line.size() && !is_space(line[stop]) &&
               std::string_view("/?#'\"").find(line[stop]) == std::string_view::npos)
          ++stop;
        std::size_t user_end = line.substr(authority, stop - authority).rfind('@');
        out += "://";
        if (user_end != std::string_view::npos) {
          out += k_hidden;
          at = authority + user_end;
        } else {
          at = authority;
        }
        continue;
      }
      if (line[at] == '=' && (names_secret(key_before(line, core_start, at)) || (curl_user && at == core_start + 6))) {
        std::size_t from = at + 1;
        if (curl_user && at == core_start + 6) {
          std::size_t stop = value_end(line, from);
          std::size_t colon = line.substr(from, stop - from).find(':');
          from = colon == std::string_view::npos ? stop : from + colon + 1;
        }
        std::size_t to = value_end(line, from);
        out.append(line.substr(at, from - at));
        if (to > from) out += k_hidden;
        at = to;
        // A quoted value may run past the word's first space.
        end = std::max(end, at);
        while (end < line.size() && !is_space(line[end]))
          ++end;
        continue;
      }
      out += line[at++];
    }
    i = end;
  }
  return out;
}

} // namespace dlock
