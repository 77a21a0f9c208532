#pragma once

#include "core/duration.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Reading what etcd's JSON gateway answers. Every answer is outside input:
// a field of the wrong type reads as absent, never as an exception from
// the JSON library, and numbers never overflow.
namespace dlock::backend::etcd {

using Json = nlohmann::json;

// base64 as the gateway writes bytes. Decoding skips anything outside the
// alphabet (padding included) and also takes the URL-safe alphabet.
std::string base64_encode(const std::string &bytes);
std::string base64_decode(const std::string &text);

// A 64-bit number the gateway sends as a string (or omits when 0):
// revisions, TTLs and lease IDs (int64), member IDs (uint64). 0 when
// absent, malformed or out of range.
std::int64_t number_in(const Json &object, const char *field);
std::uint64_t unsigned_in(const Json &object, const char *field);
// A TTL in whole seconds as a duration; negative (etcd's -1: no such
// lease) stays negative, a number too large for milliseconds is capped.
Millis seconds_in(const Json &object, const char *field);
// The field if it is a string, object or array; otherwise "", {} or [].
std::string string_in(const Json &object, const char *field);
const Json &object_in(const Json &object, const char *field);
const Json &array_in(const Json &object, const char *field);

// Why etcd refused a request: its gRPC code and message, from an error
// body ({"code": 14, "message": "..."}) or, without one, the HTTP status.
struct Refusal {
  int code = 0;
  std::string message;
};
Refusal refusal_in(const Json &answer, int http_status);

// What a watch reports: a key written or deleted at a revision, or that
// the history it was to follow is gone (compacted: anything may have
// happened since, so look again).
struct WatchEvent {
  enum class Kind { put, deleted, compacted } kind = Kind::put;
  std::string key;               // decoded; empty when compacted
  std::int64_t mod_revision = 0; // 0 when compacted
};
// One line of a watch stream.
struct WatchLine {
  enum class Kind { events, error, canceled, other } kind = Kind::other;
  std::vector<WatchEvent> events;
  std::string error;                 // error: etcd's text
  std::int64_t compact_revision = 0; // canceled: > 0 when the history asked for is gone
};
WatchLine parse_watch_line(std::string_view line);

// A release token is the lease ID in lower-case hex, as in the lock's key
// ("NS/NAME/694d7b0f3a8c1e2"); lease_from_token gives nullopt for
// anything else.
std::string lease_hex(std::int64_t lease);
std::optional<std::int64_t> lease_from_token(const std::string &token);

// A shared holder's token: "read-" and its lease ID in hex, its key
// "NS/NAME/read/<lease id in hex>".
inline constexpr std::string_view k_reader_token = "read-";
// A semaphore holder's: "sem-" and its lease ID, its key
// "NS/NAME/sem/<lease id in hex>".
inline constexpr std::string_view k_slot_token = "sem-";

// A key under a lock's prefix, as a range answer lists it.
struct Contender {
  std::string key;
  std::int64_t create_revision = 0;
  std::int64_t lease = 0;
  std::string value;
  bool reader = false; // "PREFIX/read/X": a shared holder (etcd's RWMutex recipe)
};
// The keys of one lock, by create revision: the direct children of its
// prefix ("NS/a/x" and "NS/a/b/x" belong to locks "a" and "a/b"), which is
// concurrency.Mutex's layout, and the children of "PREFIX/read/" and
// "PREFIX/write/", recipes.RWMutex's readers and writers. (So "NS/a/read/x"
// is a reader of "a", never the holder of a lock named "a/read".)
std::vector<Contender> contenders_in(const Json &range, const std::string &prefix);

} // namespace dlock::backend::etcd
