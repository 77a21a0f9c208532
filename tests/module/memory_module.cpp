// A backend module used only by the tests of the module loader: it proves
// that a backend built as a separate shared object is found beside the
// binary (build tree) and in lib/dlock (installed tree), and that it links
// against the dlock_core symbols the binary exports. Locks live in this
// process's memory only.
#include "backend/backend.hpp"
#include "backend/registry.hpp"

#include <map>

namespace {

using namespace dlock;
using namespace dlock::backend;

class MemoryBackend final : public Backend {
public:
  AcquireResult try_acquire(const LockRequest &request) override {
    if (m_locks.count(request.name)) return {AcquireOutcome::busy, std::nullopt, 0};
    Lease lease{request.name, random_hex(16), ++m_fence, request.ttl, SteadyClock::now()};
    m_locks[request.name] = {lease.token, request.ttl};
    return {AcquireOutcome::acquired, lease, 0};
  }
  AcquireResult acquire(const LockRequest &request, std::optional<SteadyClock::time_point>,
                        const Interrupt &) override {
    return try_acquire(request);
  }
  RenewResult renew(const Lease &lease, Millis ttl, std::optional<SteadyClock::time_point>) override {
    auto sent_at = SteadyClock::now();
    if (!owns(lease)) return {RenewOutcome::lost, {}, sent_at, "not held"};
    // 0: the lock's own length; a length given becomes it.
    Millis &length = m_locks[lease.name].length;
    if (ttl > Millis(0)) length = ttl;
    return {RenewOutcome::renewed, length, sent_at, ""};
  }
  ReleaseOutcome release(const Lease &lease) override {
    if (!owns(lease)) return ReleaseOutcome::not_owner;
    m_locks.erase(lease.name);
    return ReleaseOutcome::released;
  }
  std::optional<LockStatus> force_release(const std::string &) override { return std::nullopt; }
  LockStatus status(const std::string &name) override { return {name, m_locks.count(name) > 0, {}, {}, {}, {}, ""}; }
  std::vector<LockStatus> list(const std::string &) override { return {}; }
  PingResult ping() override {
    return {{NodeHealth{"memory", true, "test module", Millis(0), ""}}, std::nullopt, "loaded from a module"};
  }

private:
  bool owns(const Lease &lease) const {
    auto found = m_locks.find(lease.name);
    return found != m_locks.end() && found->second.token == lease.token;
  }
  struct Held {
    std::string token;
    Millis length{};
  };
  std::map<std::string, Held> m_locks;
  std::uint64_t m_fence = 0;
};

std::unique_ptr<Backend> create(const BackendConfig &) { return std::make_unique<MemoryBackend>(); }

} // namespace

extern "C" {
extern const dlock::backend::ModuleEntry dlock_backend_module;
const dlock::backend::ModuleEntry dlock_backend_module = {dlock::backend::k_module_abi_version, "test-memory", &create};
}
