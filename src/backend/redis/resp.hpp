#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;
struct redisReplyObjectFunctions;

namespace dlock::backend::redis {

// One RESP2 reply, owned (hiredis' reply tree converted once).
struct Reply {
  enum class Type { string, array, integer, nil, status, error };
  Type type = Type::nil;
  std::string str; // string, status, error
  long long integer = 0;
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::error; }
  bool is_nil() const { return type == Type::nil; }
  // The error's first word ("WRONGPASS", "NOAUTH", "READONLY", ...).
  std::string_view error_code() const;
  // The integer of an integer reply; any other reply is not from a Redis
  // running dlock's script (a proxy's, a late one): UnavailableError (69)
  // "`where`: unexpected reply to `what`", never taken for an answer.
  long long expect_integer(std::string_view where, std::string_view what) const;
};

// Appends one command as a RESP array of bulk strings: binary safe, so
// arguments are never quoted or split.
void append_command(std::string &out, std::initializer_list<std::string_view> args);
void append_command(std::string &out, const std::vector<std::string> &args);

// Incremental reply parser: bytes in as they arrive, whole replies out.
// hiredis' redisReader does the parsing; this owns it and its replies.
class ReplyParser {
public:
  ReplyParser();
  ~ReplyParser();
  ReplyParser(const ReplyParser &) = delete;
  ReplyParser &operator=(const ReplyParser &) = delete;

  // At most this many values (strings, integers, arrays, nils) in one
  // reply: a SCAN batch has about a thousand. Each costs hiredis an
  // allocation, so a reply of tiny values must be bounded by count too.
  static constexpr std::size_t k_max_values = 1u << 16;

  void feed(const char *data, std::size_t size);
  // The next complete reply, or nullopt if more bytes are needed. Throws
  // dlock::Error (unavailable) on a protocol error (the parser must then be
  // reset, and the connection it read closed) and on a reply of more than
  // k_max_values values.
  std::optional<Reply> next();
  // Bytes fed that belong to the reply not yet complete (for the size
  // limit of a reply, k_max_redis_reply).
  std::size_t pending() const;
  void reset();

private:
  void create();

  redisReader *m_reader = nullptr;
  std::size_t m_fed = 0;         // bytes fed since the reset
  std::size_t m_reply_start = 0; // where in them the pending reply starts
  std::size_t m_values = 0;      // values created for the pending reply
};

} // namespace dlock::backend::redis
