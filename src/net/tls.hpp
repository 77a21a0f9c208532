#pragma once

#include "net/net.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <sys/types.h>

namespace dlock::net {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;   // ?cacert=: verify the server against this bundle, not the system's
  std::string cert_file; // ?cert= and ?key=: client certificate
  std::string key_file;
  bool insecure = false; // ?insecure=1: no verification at all
};

// A TLS client session over a connected, non-blocking socket (used by
// net::Stream, not directly). OpenSSL is loaded with runtime_library the
// first time a TLS URL is used, so plain runs never pay for mapping and
// relocating libssl and libcrypto.
class TlsSession {
public:
  // Handshake, verifying the server certificate and its host name (or IP)
  // unless `options.insecure`. Throws dlock::Error: 78 for unusable
  // certificate files, 69 when the handshake fails or does not finish by
  // `deadline`. `where` names the server in messages.
  TlsSession(int fd, const TlsOptions &options, const std::string &host, Deadline deadline, const std::string &where);
  ~TlsSession();
  TlsSession(const TlsSession &) = delete;
  TlsSession &operator=(const TlsSession &) = delete;

  // Non-blocking I/O: bytes moved (>0), 0 at end of stream, or -1 with
  // `wants_write` telling which readiness to poll for. Throws on errors.
  ssize_t read(char *buffer, std::size_t size, bool &wants_write);
  ssize_t write(const char *data, std::size_t size, bool &wants_write);

private:
  struct State;
  std::unique_ptr<State> m_state;
};

} // namespace dlock::net
