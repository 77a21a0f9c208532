#include "backend/etcd/http_framing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

namespace dlock::backend::etcd::http {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

bool icontains(std::string_view text, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i)
    if (iequals(text.substr(i, word.size()), word)) return true;
  return false;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

// At most 80 bytes of what the server sent, printable.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80))
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  return out;
}

constexpr std::size_t k_max_chunk_line = 4096;

// Days from 1970-01-01 to year-month-day of the proleptic Gregorian
// calendar (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  auto yoe = static_cast<unsigned>(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

} // namespace

std::optional<std::int64_t> parse_http_date(std::string_view text) {
  // "Sun, 06 Nov 1994 08:49:37 GMT": 29 bytes, every field at its place.
  static constexpr std::string_view k_months = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (text.size() != 29 || text.substr(3, 2) != ", " || text[7] != ' ' || text[11] != ' ' || text[16] != ' ' ||
      text[19] != ':' || text[22] != ':' || text.substr(25) != " GMT")
    return std::nullopt;
  auto number = [&](std::size_t at, std::size_t width, unsigned &value) {
    auto parsed = std::from_chars(text.data() + at, text.data() + at + width, value);
    return parsed.ec == std::errc() && parsed.ptr == text.data() + at + width;
  };
  unsigned day = 0, year = 0, hour = 0, minute = 0, second = 0;
  std::size_t month = k_months.find(text.substr(8, 3));
  if (month == std::string_view::npos || month % 3 != 0 || !number(5, 2, day) || !number(12, 4, year) ||
      !number(17, 2, hour) || !number(20, 2, minute) || !number(23, 2, second) || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60)
    return std::nullopt;
  return days_from_civil(year, static_cast<unsigned>(month / 3 + 1), day) * 86400 + hour * 3600 + minute * 60 + second;
}

std::optional<Head> parse_head(std::string_view in) {
  std::size_t end = in.find("\r\n\r\n");
  if (end == std::string_view::npos || end + 4 > k_max_head) {
    if (in.size() >= k_max_head) throw FramingError("response headers too long");
    return std::nullopt;
  }
  std::string_view head = in.substr(0, end + 2);
  std::size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  Head result;
  if (!line.starts_with("HTTP/1.") || line.size() < 12 || line[8] != ' ' ||
      std::from_chars(line.data() + 9, line.data() + 12, result.status).ptr != line.data() + 12 ||
      result.status < 100 || (line.size() > 12 && line[12] != ' '))
    throw FramingError(fmt::format("not an HTTP response: '{}'", shown(line)));
  result.keep = line.starts_with("HTTP/1.1");
  bool chunked = false, has_length = false;
  for (head.remove_prefix(eol + 2); !head.empty(); head.remove_prefix(eol + 2)) {
    eol = head.find("\r\n");
    line = head.substr(0, eol);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::size_t length = 0;
      auto parsed = std::from_chars(value.data(), value.data() + value.size(), length);
      // Two different lengths leave the body's end in doubt.
      // (from_chars leaves `length` alone on an overflow: check ec too.)
      if (value.empty() || parsed.ec != std::errc() || parsed.ptr != value.data() + value.size() ||
          (has_length && length != result.length))
        throw FramingError(fmt::format("bad Content-Length '{}'", shown(value)));
      result.length = length;
      has_length = true;
    } else if (iequals(name, "transfer-encoding")) {
      chunked = icontains(value, "chunked");
    } else if (iequals(name, "date")) {
      result.date = parse_http_date(value);
    } else if (iequals(name, "connection")) {
      if (icontains(value, "close"))
        result.keep = false;
      else if (icontains(value, "keep-alive"))
        result.keep = true;
    }
  }
  result.size = end + 4;
  if (chunked) {
    result.framing = Framing::chunked;
    result.length = 0;
  } else if (has_length || result.status == 204 || result.status == 304) {
    result.framing = Framing::length;
  } else {
    result.framing = Framing::until_close;
    result.keep = false;
  }
  return result;
}

bool BodyDecoder::decode(std::string &in, std::string &out) {
  if (m_framing == Framing::until_close) {
    out += in;
    in.clear();
    return false;
  }
  std::size_t used = 0; // consumed bytes of `in`, erased once at the end
  bool complete = false;
  for (;;) {
    if (m_framing == Framing::length || m_chunk == Chunk::data) {
      std::size_t take = std::min(m_left, in.size() - used);
      out.append(in, used, take);
      used += take;
      m_left -= take;
      if (m_left > 0) break;
      if (m_framing == Framing::length) {
        complete = true;
        break;
      }
      m_chunk = Chunk::data_end;
    }
    std::size_t eol = in.find("\r\n", used);
    if (eol == std::string::npos) {
      if (in.size() - used > k_max_chunk_line) throw FramingError("malformed chunked response");
      break;
    }
    std::string_view line(in.data() + used, eol - used);
    used = eol + 2;
    if (m_chunk == Chunk::data_end) {
      if (!line.empty()) throw FramingError("malformed chunked response");
      m_chunk = Chunk::size_line;
    } else if (m_chunk == Chunk::size_line) {
      line = trim(line.substr(0, line.find(';')));
      auto parsed = std::from_chars(line.data(), line.data() + line.size(), m_left, 16);
      if (line.empty() || parsed.ec != std::errc() || parsed.ptr != line.data() + line.size())
        throw FramingError("malformed chunk size");
      m_chunk = m_left == 0 ? Chunk::trailer : Chunk::data;
    } else if (line.empty()) { // the blank line after the last chunk's trailers
      complete = true;
      break;
    }
  }
  in.erase(0, used);
  return complete;
}

} // namespace dlock::backend::etcd::http
