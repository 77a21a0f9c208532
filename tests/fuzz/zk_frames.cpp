// The lengths of the frames a ZooKeeper server sends, checked as the bytes
// come (backend/zookeeper/frame_limit.cpp). The first byte chooses how the
// rest is cut into pieces; cut any way, the stream must get the same verdict
// as when taken whole, and that verdict must match a plain walk of the frames.
#include "backend/zookeeper/frame_limit.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  std::size_t piece = data[0] % 7 + 1;
  ++data;
  --size;
  constexpr std::uint32_t limit = 64; // small, so that bodies are crossed often
  dlock::backend::zookeeper::FrameReader whole(limit), cut(limit);
  bool whole_ok = whole.take(data, size);
  bool cut_ok = true;
  for (std::size_t at = 0; at < size; at += piece)
    cut_ok = cut.take(data + at, size - at < piece ? size - at : piece) && cut_ok;
  if (whole_ok != cut_ok) std::abort();
  if (!whole_ok && whole.refused_length() != cut.refused_length()) std::abort();
  // A plain walk: 4-byte big-endian length, then that many bytes.
  bool walk_ok = true;
  std::size_t at = 0;
  while (at + 4 <= size) {
    std::uint32_t raw = (std::uint32_t{data[at]} << 24) | (std::uint32_t{data[at + 1]} << 16) |
                        (std::uint32_t{data[at + 2]} << 8) | std::uint32_t{data[at + 3]};
    if (raw > limit) { // also every negative length
      walk_ok = false;
      break;
    }
    at += 4 + raw;
  }
  if (walk_ok != whole_ok) std::abort();
  return 0;
}
