#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

// HTTP/1.1 response framing, apart from any socket so that it can be
// unit-tested and fuzzed: the status line and headers, then the body by
// Content-Length, chunked transfer coding or the connection's close.
namespace dlock::backend::etcd::http {

// A response that breaks the framing rules (the caller closes the
// connection; the text says what was wrong).
class FramingError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t k_max_head = 65536;

enum class Framing { length, chunked, until_close };

struct Head {
  int status = 0;
  bool keep = true;                  // the server keeps the connection open
  Framing framing = Framing::length; // how the body ends
  std::size_t length = 0;            // Content-Length (Framing::length)
  std::size_t size = 0;              // bytes of the head, with its blank line
  std::optional<std::int64_t> date;  // the Date header, in seconds since the epoch
};

// An HTTP-date in the IMF-fixdate form every server sends (RFC 9110
// 5.6.7: "Sun, 06 Nov 1994 08:49:37 GMT") as seconds since the epoch;
// nullopt for anything else (the obsolete forms are not read).
std::optional<std::int64_t> parse_http_date(std::string_view text);

// The head at the start of `in`; nullopt while it is incomplete. Throws
// FramingError for a head that is not HTTP/1.x, has a bad Content-Length,
// or is incomplete at k_max_head bytes.
std::optional<Head> parse_head(std::string_view in);

// Takes the body of one response out of the bytes that arrive.
class BodyDecoder {
public:
  BodyDecoder() = default;
  explicit BodyDecoder(const Head &head) : m_framing(head.framing), m_left(head.length) {}

  // Moves the body's bytes from the front of `in` to `out` (framing
  // removed, consumed bytes erased); true once the body is complete
  // (never for Framing::until_close, which ends with the connection).
  // Throws FramingError for bad chunk framing.
  bool decode(std::string &in, std::string &out);

  Framing framing() const { return m_framing; }
  // Body bytes still to come (Framing::length) or in the current chunk.
  std::size_t left() const { return m_left; }

private:
  enum class Chunk { size_line, data, data_end, trailer };
  Framing m_framing = Framing::length;
  Chunk m_chunk = Chunk::size_line;
  std::size_t m_left = 0;
};

} // namespace dlock::backend::etcd::http
