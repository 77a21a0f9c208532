#pragma once

#include "backend/backend.hpp"

#include <memory>

namespace dlock::backend::etcd {

// etcd://host[:2379][,host[:port]...] and etcds:// (TLS, ?cacert=&cert=&key=),
// user and password for etcd's authentication: the lock recipe of etcd's
// concurrency package (so `etcdctl lock NS/NAME` and Go's
// concurrency.Mutex share dlock's locks), over the v3 JSON gateway.
std::unique_ptr<Backend> create_etcd_backend(const BackendConfig &config);

} // namespace dlock::backend::etcd
