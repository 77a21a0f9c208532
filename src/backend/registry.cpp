#include "backend/registry.hpp"

#include "backend/file/file_backend.hpp"
#include "backend/postgres/pg_backend.hpp"
#include "backend/redis/redis_backend.hpp"
#include "backend/redis/redlock_backend.hpp"
#include "backend/zookeeper/zk_backend.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>

namespace dlock::backend {

namespace {

std::string executable_dir() {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0) return ".";
  std::string path(buffer, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// Modules are looked up beside the binary (build tree), then in
// ../lib/dlock relative to it (after `cmake --install`), then in
// DLOCK_MODULE_PATH if set (tests).
std::vector<std::string> module_dirs() {
  std::vector<std::string> dirs;
  if (const char *extra = std::getenv("DLOCK_MODULE_PATH"); extra && *extra) dirs.emplace_back(extra);
  std::string exe = executable_dir();
  dirs.push_back(exe + "/modules");
  dirs.push_back(exe + "/../" DLOCK_LIBDIR "/dlock");
  if (std::string_view(DLOCK_LIBDIR) != "lib") dirs.push_back(exe + "/../lib/dlock");
  return dirs;
}

std::string module_path(const BackendInfo &info) {
  for (const auto &dir : module_dirs()) {
    std::string path = fmt::format("{}/dlock-{}.so", dir, info.module);
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return {};
}

} // namespace

const std::vector<BackendInfo> &known_backends() {
  static const std::vector<BackendInfo> backends = {
      {{"file"}, "", true, "local kernel locks (flock) in a directory; the default", &file::create_file_backend},
      {{"redis", "rediss", "redis+unix", "redis-sentinel"},
       "",
       false,
       "single Redis node (or Sentinel's master): SET NX PX + Lua, waiters via pub/sub",
       &redis::create_redis_backend},
      {{"redlock", "redlocks"},
       "",
       false,
       "majority quorum over N independent Redis nodes, quorum fences",
       &redis::create_redlock_backend},
      {{"zk"},
       "",
       true,
       "ZooKeeper: ephemeral sequential nodes, watch the predecessor, zxid fences (Curator-compatible)",
       &zookeeper::create_zookeeper_backend},
      {{"postgres", "postgresql"},
       "",
       true,
       "PostgreSQL: session advisory lock on a key from namespace and name, txid fences (libpq loaded on use)",
       &postgres::create_postgres_backend},
      {{"etcd", "etcds"},
       "etcd",
       false,
       "etcd: lease + key under NS/NAME/ as etcd's concurrency.Mutex, revision fences (etcdctl lock-compatible)",
       nullptr},
      {{"test-memory"}, "testmemory", false, "in-process locks; exists to test the module loader", nullptr, true},
  };
  return backends;
}

const BackendInfo &find_backend(std::string_view scheme) {
  std::vector<std::string> names;
  for (const auto &info : known_backends()) {
    for (auto candidate : info.schemes) {
      if (candidate == scheme) return info;
      if (!info.hidden) names.emplace_back(candidate);
    }
  }
  throw ConfigError(fmt::format("unknown backend scheme '{}:'; known schemes: {}", scheme, fmt::join(names, ":, ")) +
                    ":");
}

bool backend_available(const BackendInfo &info, std::string *where) {
  if (info.builtin) {
    if (where) *where = "built in";
    return true;
  }
  std::string path = module_path(info);
  if (where) *where = path.empty() ? fmt::format("module dlock-{}.so not installed", info.module) : path;
  return !path.empty();
}

std::unique_ptr<Backend> create_backend(const BackendConfig &config) {
  const BackendInfo &info = find_backend(config.url.scheme);
  if (info.builtin) return info.builtin(config);
  std::string path = module_path(info);
  if (path.empty())
    throw ConfigError(fmt::format("backend '{}:' is not available in this build: module dlock-{}.so not found in {}",
                                  config.url.scheme, info.module, fmt::join(module_dirs(), ", ")));
  // The module stays loaded for the life of the process: backends own
  // threads and atexit handlers of their client libraries.
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw ConfigError(fmt::format("cannot load backend module {}: {}", path, dlerror()));
  auto *entry = static_cast<const ModuleEntry *>(dlsym(handle, "dlock_backend_module"));
  if (!entry || entry->abi_version != k_module_abi_version || !entry->factory)
    throw ConfigError(fmt::format("backend module {} does not match this dlock (ABI {})", path, k_module_abi_version));
  return entry->factory(config);
}

} // namespace dlock::backend
