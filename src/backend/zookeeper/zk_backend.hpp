#pragma once

#include "backend/backend.hpp"

#include <memory>

namespace dlock::backend::zookeeper {

// zk://[user:pass@]h1:2181,h2:2181[/chroot]: the lock recipe of Curator's
// InterProcessMutex. Lock NAME of namespace NS is the znode <chroot>/NS/NAME;
// each contender creates an ephemeral sequential child with a protected
// name ("_c_<uuid>-lock-<sequence>"), the lowest sequence holds the lock and
// every other contender watches only its predecessor. T is the session
// timeout the server negotiated; the fence is the czxid of the holder's
// node. The lock lives as long as the session (session bound).
std::unique_ptr<Backend> create_zookeeper_backend(const BackendConfig &config);

} // namespace dlock::backend::zookeeper
