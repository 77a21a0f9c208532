#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// The ZooKeeper C client reads a frame's 4-byte length, allocates that
// many bytes (up to 2 GiB) and fills them as the server sends them, so a
// hostile server or proxy could make dlock's memory grow without bound
// (Java clients refuse a frame over jute.maxbuffer). The build renames
// the client's calls to recv() and connect() to dlock_zk_recv() and
// dlock_zk_connect() (objcopy --redefine-sym on its static archive, see
// src/CMakeLists.txt): every byte the client reads from a server passes
// through a FrameReader first, and a frame longer than the limit fails the
// read as a broken connection, before the client allocates anything. The
// client then closes the connection and tries a server again.

namespace dlock::backend::zookeeper {

// The longest frame taken from a ZooKeeper server: far more than any
// answer dlock asks for (a child list of 100,000 lock names is ~3 MiB).
inline constexpr std::uint32_t k_frame_limit = 8u << 20;

// The lengths of the frames in one connection's byte stream, checked as
// the bytes come in any pieces.
class FrameReader {
public:
  explicit FrameReader(std::uint32_t limit = k_frame_limit) : m_limit(limit) {}
  // Takes the next `size` bytes of the stream. False once a frame's length
  // is negative or over the limit (and for everything after it).
  bool take(const unsigned char *data, std::size_t size);
  // The length that was refused (meaningful once take() returned false).
  std::int64_t refused_length() const { return m_refused; }

private:
  std::uint32_t m_limit;
  unsigned char m_header[4] = {};
  std::size_t m_header_size = 0;
  std::uint64_t m_body_left = 0;
  std::int64_t m_refused = -1;
  bool m_failed = false;
};

// Why the latest connection to a ZooKeeper server was cut for a frame over
// the limit, e.g. "127.0.0.1:2181 announced a frame of 2147483647 bytes,
// over the 8 MiB limit"; empty if none was. clear_frame_refusal() forgets it.
std::string last_frame_refusal();
void clear_frame_refusal();

} // namespace dlock::backend::zookeeper
