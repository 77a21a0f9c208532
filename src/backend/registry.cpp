#include "backend/registry.hpp"

#include "backend/etcd/etcd_backend.hpp"
#include "backend/file/file_backend.hpp"
#include "backend/postgres/pg_backend.hpp"
#include "backend/redis/redis_backend.hpp"
#include "backend/redis/redlock_backend.hpp"
#include "backend/zookeeper/zk_backend.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <string>

namespace dlock::backend {

const std::vector<BackendInfo> &known_backends() {
  static const std::vector<BackendInfo> backends = {
      {.schemes = {"file"},
       .session_bound = true,
       .summary = "local kernel locks (flock) in a directory; the default",
       .create = &file::create_file_backend},
      {.schemes = {"redis", "rediss", "redis+unix", "redis-sentinel"},
       .session_bound = false,
       .summary = "single Redis node (or Sentinel's master): SET NX PX + Lua, waiters via pub/sub",
       .create = &redis::create_redis_backend},
      {.schemes = {"redlock", "redlocks"},
       .session_bound = false,
       .summary = "majority quorum over N independent Redis nodes, quorum fences",
       .create = &redis::create_redlock_backend},
      {.schemes = {"zk"},
       .session_bound = true,
       .summary = "ZooKeeper: ephemeral sequential nodes, watch the predecessor, zxid fences (Curator-compatible)",
       .create = &zookeeper::create_zookeeper_backend},
      {.schemes = {"postgres", "postgresql"},
       .session_bound = true,
       .summary = "PostgreSQL: session advisory lock on a key from namespace and name, txid fences (libpq loaded on "
                  "use)",
       .create = &postgres::create_postgres_backend},
      {.schemes = {"etcd", "etcds"},
       .session_bound = false,
       .summary = "etcd: lease + key under NS/NAME/ as etcd's concurrency.Mutex, revision fences (etcdctl "
                  "lock-compatible)",
       .create = &etcd::create_etcd_backend},
  };
  return backends;
}

const BackendInfo &find_backend(std::string_view scheme) {
  std::vector<std::string_view> names;
  for (const auto &info : known_backends()) {
    for (auto candidate : info.schemes) {
      if (candidate == scheme) return info;
      names.push_back(candidate);
    }
  }
  throw ConfigError(fmt::format("unknown backend scheme '{}:'; known schemes: {}", scheme, fmt::join(names, ":, ")) +
                    ":");
}

std::unique_ptr<Backend> create_backend(const BackendConfig &config) {
  return find_backend(config.url.scheme).create(config);
}

} // namespace dlock::backend
