#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;

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

  void feed(const char *data, std::size_t size);
  // The next complete reply, or nullopt if more bytes are needed. Throws
  // dlock::Error (unavailable) on a protocol error.
  std::optional<Reply> next();
  void reset();

private:
  redisReader *m_reader = nullptr;
};

} // namespace dlock::backend::redis
