#include "backend/etcd/http_framing.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace dlock::backend::etcd::http;

namespace {

// The whole body of `response` fed in pieces of `step` bytes, as it may
// arrive from a socket; the bytes after it are left in `rest`.
std::string body_of(const std::string &response, std::size_t step, std::string *rest = nullptr) {
  auto head = parse_head(response);
  REQUIRE(head);
  BodyDecoder decoder(*head);
  std::string in, out;
  bool complete = false;
  for (std::size_t at = head->size; at < response.size() && !complete; at += step) {
    in.append(response, at, step);
    complete = decoder.decode(in, out);
  }
  if (!complete) complete = decoder.decode(in, out);
  CHECK((complete || head->framing == Framing::until_close));
  if (rest) *rest = in;
  return out;
}

} // namespace

TEST_CASE("http framing: a status line, headers and a Content-Length body") {
  std::string response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}";
  auto head = parse_head(response);
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->keep);
  CHECK(head->framing == Framing::length);
  CHECK(head->length == 7);
  CHECK(head->size == response.size() - 7);
  for (std::size_t step : {1, 2, 5, 100})
    CHECK(body_of(response, step) == "{\"a\":1}");
}

TEST_CASE("http framing: an incomplete head is not an error until 64 KiB") {
  CHECK_FALSE(parse_head("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"));
  CHECK_FALSE(parse_head(""));
  std::string big = "HTTP/1.1 200 OK\r\nX: " + std::string(k_max_head, 'x');
  CHECK_THROWS_AS(parse_head(big), FramingError);
}

TEST_CASE("http framing: chunked bodies, with extensions and trailers, in any split") {
  std::string response = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nGrpc-Status: 0\r\n\r\n"
                         "HTTP/1.1 200 OK";
  for (std::size_t step : {1, 3, 7, 1000}) {
    std::string rest;
    CHECK(body_of(response, step, &rest) == "Wikipedia in\r\n\r\nchunks.");
    // What follows the response stays for the next one.
    CHECK(std::string("HTTP/1.1 200 OK").starts_with(rest));
  }
}

TEST_CASE("http framing: HTTP/1.0, Connection: close and a body without a length end with the connection") {
  auto head = parse_head("HTTP/1.0 200 OK\r\n\r\n");
  REQUIRE(head);
  CHECK_FALSE(head->keep);
  CHECK(head->framing == Framing::until_close);
  head = parse_head("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(head);
  CHECK_FALSE(head->keep);
  CHECK(head->framing == Framing::length);
  head = parse_head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(head);
  CHECK(head->keep);
  head = parse_head("HTTP/1.1 204 No Content\r\n\r\n");
  REQUIRE(head);
  CHECK(head->framing == Framing::length);
  CHECK(head->length == 0);
}

TEST_CASE("http framing: what is not HTTP, or leaves the body's end in doubt, is refused") {
  for (const char *bad :
       {"SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 20x OK\r\n\r\n", "HTTP/1.1 099 Low\r\n\r\n",
        "HTTP/2 200\r\n\r\n", "HTTP/1.1  200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_head(bad), FramingError);
  }
  // The same length twice is not in doubt.
  CHECK(parse_head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"));
}

TEST_CASE("http framing: bad chunk framing is refused, an endless chunk size line too") {
  Head head;
  head.framing = Framing::chunked;
  for (const char *bad : {"zz\r\n", "\r\n", "3\r\nabcX\r\n", "-1\r\n", "3 3\r\nabc\r\n", "10000000000000000\r\n"}) {
    INFO(bad);
    BodyDecoder decoder(head);
    std::string in = bad, out;
    CHECK_THROWS_AS(decoder.decode(in, out), FramingError);
  }
  BodyDecoder decoder(head);
  std::string in(5000, '1'), out;
  CHECK_THROWS_AS(decoder.decode(in, out), FramingError);
}

TEST_CASE("a Date header in the IMF-fixdate form is read as seconds since the epoch") {
  CHECK(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777);
  CHECK(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
  CHECK(parse_http_date("Tue, 29 Feb 2028 23:59:60 GMT") == 1835481600);
  for (const char *bad :
       {"", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nvo 1994 08:49:37 GMT", "Sun, 06 anF 1994 08:49:37 GMT", "Sun, 6x Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:3 GMT "})
    CHECK_FALSE(parse_http_date(bad));
  auto head = parse_head("HTTP/1.1 200 OK\r\ndate:  Sun, 06 Nov 1994 08:49:37 GMT \r\nContent-Length: 0\r\n\r\n");
  REQUIRE(head);
  CHECK(head->date == 784111777);
  CHECK_FALSE(parse_head("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")->date);
}
