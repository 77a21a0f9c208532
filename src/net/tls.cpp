#include "net/tls.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/runtime_library.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <cerrno>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlock::net {

namespace {

// The OpenSSL functions dlock calls, resolved from libssl.so.3 (libcrypto
// comes in as its dependency). The declarations come from the headers, so
// a signature mismatch is a compile error, not a crash.
struct OpenSsl {
#define DLOCK_SSL_FUNCTIONS(X)                                                                                         \
  X(TLS_client_method)                                                                                                 \
  X(SSL_CTX_new)                                                                                                       \
  X(SSL_CTX_free)                                                                                                      \
  X(SSL_CTX_ctrl)                                                                                                      \
  X(SSL_CTX_set_verify)                                                                                                \
  X(SSL_CTX_set_default_verify_paths)                                                                                  \
  X(SSL_CTX_load_verify_locations)                                                                                     \
  X(SSL_CTX_use_certificate_chain_file)                                                                                \
  X(SSL_CTX_use_PrivateKey_file)                                                                                       \
  X(SSL_CTX_check_private_key)                                                                                         \
  X(SSL_new)                                                                                                           \
  X(SSL_free)                                                                                                          \
  X(SSL_set_fd)                                                                                                        \
  X(SSL_ctrl)                                                                                                          \
  X(SSL_set1_host)                                                                                                     \
  X(SSL_get0_param)                                                                                                    \
  X(X509_VERIFY_PARAM_set1_ip_asc)                                                                                     \
  X(SSL_connect)                                                                                                       \
  X(SSL_read)                                                                                                          \
  X(SSL_write)                                                                                                         \
  X(SSL_get_error)                                                                                                     \
  X(SSL_get_verify_result)                                                                                             \
  X(X509_verify_cert_error_string)                                                                                     \
  X(ERR_get_error)                                                                                                     \
  X(ERR_clear_error)                                                                                                   \
  X(ERR_error_string_n)

#define DLOCK_SSL_MEMBER(name) decltype(&::name) name = nullptr;
  DLOCK_SSL_FUNCTIONS(DLOCK_SSL_MEMBER)
#undef DLOCK_SSL_MEMBER
};

OpenSsl load() {
  void *handle = runtime_library::open("libssl.so.3", "TLS needs OpenSSL 3 (libssl.so.3)");
  OpenSsl functions;
#define DLOCK_SSL_RESOLVE(name) runtime_library::bind(handle, "libssl.so.3", functions.name, #name);
  DLOCK_SSL_FUNCTIONS(DLOCK_SSL_RESOLVE)
#undef DLOCK_SSL_RESOLVE
  return functions;
}

const OpenSsl &openssl() {
  static runtime_library::Loaded<OpenSsl> loaded(load);
  return loaded.get();
}

// The most specific reason OpenSSL has queued, cleared afterwards.
std::string ssl_reason(const OpenSsl &ssl) {
  unsigned long code = 0, last = 0;
  while ((code = ssl.ERR_get_error()) != 0)
    last = code;
  if (last == 0) return "unknown TLS error";
  char text[256];
  ssl.ERR_error_string_n(last, text, sizeof text);
  return text;
}

bool is_ip_literal(const std::string &host) {
  unsigned char buffer[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 || inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

void check_readable(const std::string &path, const char *what) {
  if (access(path.c_str(), R_OK) != 0)
    throw ConfigError(errno_message(fmt::format("cannot read the {} {}", what, path), errno));
}

// The client key is a secret: refuse one that others can read, as ssh does.
void check_private(const std::string &path) {
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0)
    throw ConfigError(fmt::format("the TLS client key {} is readable by group or others (mode {:o}); chmod 600 it",
                                  path, info.st_mode & 0777));
}

} // namespace

struct TlsSession::State {
  const OpenSsl *ssl = nullptr;
  SSL_CTX *context = nullptr;
  SSL *session = nullptr;

  ~State() {
    if (session) ssl->SSL_free(session);
    if (context) ssl->SSL_CTX_free(context);
  }
};

TlsSession::TlsSession(int fd, const TlsOptions &options, const std::string &host, Deadline deadline,
                       const std::string &where)
    : m_state(std::make_unique<State>()) {
  if (!options.ca_file.empty()) check_readable(options.ca_file, "TLS CA file");
  if (!options.cert_file.empty() || !options.key_file.empty()) {
    if (options.cert_file.empty() || options.key_file.empty())
      throw ConfigError("a TLS client certificate needs both ?cert= and ?key=");
    check_readable(options.cert_file, "TLS client certificate");
    check_readable(options.key_file, "TLS client key");
    check_private(options.key_file);
  }
  const OpenSsl &ssl = openssl();
  State &state = *m_state;
  state.ssl = &ssl;
  ssl.ERR_clear_error();
  state.context = ssl.SSL_CTX_new(ssl.TLS_client_method());
  if (!state.context) throw Error(ExitCode::internal, "cannot create a TLS context: " + ssl_reason(ssl));
  ssl.SSL_CTX_ctrl(state.context, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
  if (options.insecure) {
    ssl.SSL_CTX_set_verify(state.context, SSL_VERIFY_NONE, nullptr);
  } else {
    ssl.SSL_CTX_set_verify(state.context, SSL_VERIFY_PEER, nullptr);
    int loaded = options.ca_file.empty()
                     ? ssl.SSL_CTX_set_default_verify_paths(state.context)
                     : ssl.SSL_CTX_load_verify_locations(state.context, options.ca_file.c_str(), nullptr);
    if (loaded != 1)
      throw ConfigError(fmt::format("cannot load the TLS CA {}: {}",
                                    options.ca_file.empty() ? "certificates of the system" : options.ca_file,
                                    ssl_reason(ssl)));
  }
  if (!options.cert_file.empty()) {
    if (ssl.SSL_CTX_use_certificate_chain_file(state.context, options.cert_file.c_str()) != 1 ||
        ssl.SSL_CTX_use_PrivateKey_file(state.context, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        ssl.SSL_CTX_check_private_key(state.context) != 1)
      throw ConfigError(fmt::format("cannot use the TLS client certificate {} with key {}: {}", options.cert_file,
                                    options.key_file, ssl_reason(ssl)));
  }
  state.session = ssl.SSL_new(state.context);
  if (!state.session || ssl.SSL_set_fd(state.session, fd) != 1)
    throw Error(ExitCode::internal, "cannot create a TLS session: " + ssl_reason(ssl));
  bool ip = is_ip_literal(host);
  if (!ip)
    ssl.SSL_ctrl(state.session, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char *>(host.c_str()));
  if (!options.insecure) {
    int named = ip ? ssl.X509_VERIFY_PARAM_set1_ip_asc(ssl.SSL_get0_param(state.session), host.c_str())
                   : ssl.SSL_set1_host(state.session, host.c_str());
    if (named != 1) throw ConfigError(fmt::format("cannot verify TLS against the host name '{}'", host));
  }

  for (;;) {
    int result = ssl.SSL_connect(state.session);
    if (result == 1) break;
    int error = ssl.SSL_get_error(state.session, result);
    short events = 0;
    if (error == SSL_ERROR_WANT_READ)
      events = POLLIN;
    else if (error == SSL_ERROR_WANT_WRITE)
      events = POLLOUT;
    else {
      long verify = ssl.SSL_get_verify_result(state.session);
      std::string reason =
          verify != X509_V_OK
              ? fmt::format("certificate verify failed: {}", ssl.X509_verify_cert_error_string(verify))
              : (error == SSL_ERROR_SYSCALL && ssl.ERR_get_error() == 0 ? std::string("connection closed by the server")
                                                                        : ssl_reason(ssl));
      throw UnavailableError(fmt::format("TLS handshake with {} failed: {}", where, reason));
    }
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw UnavailableError(fmt::format("TLS handshake with {} did not finish in time", where));
      struct pollfd item {
        fd, events, 0
      };
      int ready = poll(&item, 1, static_cast<int>(left.count()) + 1);
      if (ready > 0) break;
      if (ready < 0 && errno != EINTR) throw UnavailableError(errno_message("poll", errno));
    }
  }
  if (options.insecure) say("warning: TLS certificate of {} not verified (insecure=1)", where);
}

TlsSession::~TlsSession() = default;

ssize_t TlsSession::read(char *buffer, std::size_t size, bool &wants_write) {
  const OpenSsl &ssl = *m_state->ssl;
  ssl.ERR_clear_error();
  int n = ssl.SSL_read(m_state->session, buffer, static_cast<int>(size));
  if (n > 0) return n;
  int error = ssl.SSL_get_error(m_state->session, n);
  wants_write = error == SSL_ERROR_WANT_WRITE;
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return -1;
  if (error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && ssl.ERR_get_error() == 0)) return 0;
  throw UnavailableError("TLS read failed: " + ssl_reason(ssl));
}

ssize_t TlsSession::write(const char *data, std::size_t size, bool &wants_write) {
  const OpenSsl &ssl = *m_state->ssl;
  ssl.ERR_clear_error();
  int n = ssl.SSL_write(m_state->session, data, static_cast<int>(size));
  if (n > 0) return n;
  int error = ssl.SSL_get_error(m_state->session, n);
  wants_write = error != SSL_ERROR_WANT_READ;
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return -1;
  throw UnavailableError("TLS write failed: " + ssl_reason(ssl));
}

} // namespace dlock::net
