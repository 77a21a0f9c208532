#include "backend/zookeeper/join.hpp"

#include "backend/zookeeper/paths.hpp"
#include "core/error.hpp"

#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

namespace dlock::backend::zookeeper {

namespace {

// A read that survives a lost connection: asked again once the client has
// reconnected, within the connect timeout.
template <typename Send>
const Call &read(SemaphoreHost &host, Session &session, Send send, const std::string &what, CallPtr &keep,
                 const JoinOptions &options) {
  auto deadline = SteadyClock::now() + options.connect_timeout;
  for (;;) {
    keep = send();
    const Call &call = host.finish(session, keep, what);
    if (call.rc != ZCONNECTIONLOSS || !session.wait_connected(deadline)) return call;
  }
}

// Our nodes among `children` (those of our protected id), lowest first;
// empty unless our first node is there.
std::vector<std::string> own_among(const std::vector<std::string> &children, const std::string &lock,
                                   const std::vector<std::string> &prefixes) {
  std::vector<std::string> out(prefixes.size());
  for (const auto &child : children)
    for (std::size_t i = 0; i < prefixes.size(); ++i)
      if (child.rfind(prefixes[i], 0) == 0 && contender_sequence(child)) out[i] = lock + "/" + child;
  if (out.front().empty()) return {};
  std::erase_if(out, [](const std::string &path) { return path.empty(); });
  return out;
}

} // namespace

Queued join_queue(SemaphoreHost &host, Session &session, const std::string &lock, const LockRequest &request,
                  const JoinOptions &options) {
  std::vector<std::string> prefixes = new_node_prefixes(request.mode);
  std::vector<std::string> paths;
  for (const auto &prefix : prefixes)
    paths.push_back(lock + "/" + prefix);
  std::string data = encode_holder(request.holder);
  auto stat_of = [&](Queued queued) {
    CallPtr keep;
    const Call &mine = read(
        host, session, [&] { return session.exists(queued.paths.front()); }, "cannot read our node", keep, options);
    if (mine.rc != ZOK) session.fail(mine.rc, fmt::format("cannot read our node {}", queued.paths.front()));
    queued.stat = mine.stat;
    return queued;
  };
  for (int attempt = 0; attempt < 5; ++attempt) {
    CallPtr create = session.create_all(paths, data, ZOO_EPHEMERAL_SEQUENTIAL, options.restricted);
    CallPtr list = session.children(lock);
    bool answered = session.wait(*create, create->sent_at + options.connect_timeout);
    if (answered && create->rc == ZOK) {
      // A write goes through the leader: our session was alive there.
      session.note_confirmed(create->sent_at);
      Queued queued{create->children, {}, {}};
      CallPtr keep;
      const Call *children = &host.finish(session, list, "cannot list the lock's queue");
      if (children->rc != ZOK)
        children = &read(
            host, session, [&] { return session.children(lock); }, "cannot list the lock's queue", keep, options);
      if (children->rc != ZOK) session.fail(children->rc, fmt::format("cannot list {}", lock));
      queued.children = children->children;
      return stat_of(std::move(queued));
    }
    if (answered && create->rc == ZNONODE) {
      host.create_parents(session, lock);
      continue;
    }
    if (answered && create->rc != ZCONNECTIONLOSS)
      session.fail(create->rc, fmt::format("cannot join the queue of {}", lock));
    // Unknown whether the nodes were made: the protected id finds them.
    if (!session.wait_connected(SteadyClock::now() + options.connect_timeout))
      throw UnavailableError(fmt::format("{}: lost the connection while joining the queue of {}", options.label, lock));
    CallPtr keep;
    const Call &children = read(
        host, session, [&] { return session.children(lock); }, "cannot list the lock's queue", keep, options);
    if (children.rc != ZOK) continue;
    auto own = own_among(children.children, lock, prefixes);
    if (!own.empty()) return stat_of(Queued{own, {}, children.children});
  }
  throw UnavailableError(fmt::format("{}: could not join the queue of {}: it kept changing", options.label, lock));
}

} // namespace dlock::backend::zookeeper
