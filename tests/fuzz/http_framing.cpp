// HTTP/1.1 framing of what etcd's gateway (or anything on its port)
// answers: status line, headers, Content-Length, chunked bodies. The
// first byte picks the piece size the body arrives in, so that every
// split of the framing is tried. Nothing may throw but FramingError, and
// a body is never longer than the bytes that carried it.
#include "backend/etcd/http_framing.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace dlock::backend::etcd::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  std::size_t step = data[0] % 16 + 1;
  std::string_view input(reinterpret_cast<const char *>(data) + 1, size - 1);
  try {
    // Informational heads (100 Continue) are skipped, as the client does.
    std::optional<Head> head;
    while ((head = parse_head(input)) && head->status < 200) {
      if (head->size == 0 || head->size > input.size()) std::abort();
      input.remove_prefix(head->size);
    }
    if (!head) return 0;
    if (head->size > input.size()) std::abort();
    BodyDecoder decoder(*head);
    std::string in, out;
    bool complete = false;
    std::size_t fed = 0;
    for (std::size_t at = head->size; at < input.size() && !complete; at += step) {
      std::string_view piece = input.substr(at, step);
      in.append(piece);
      fed += piece.size();
      complete = decoder.decode(in, out);
      if (out.size() > fed || in.size() > fed) std::abort();
    }
    if (complete && head->framing == Framing::length && out.size() != head->length) std::abort();
  } catch (const FramingError &) {
  }
  return 0;
}
