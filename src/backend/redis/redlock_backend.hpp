#pragma once

#include "backend/backend.hpp"

#include <memory>

namespace dlock::backend::redis {

// Redlock over N >= 3 independent Redis servers (redlock://, redlocks://
// for TLS): the Redis backend's keys and scripts on every node, requests
// to all nodes at once, success with a majority within the validity
// window (ttl - elapsed - drift). T is that validity.
//
// Fences. Each granting node returns its fence counter and its clock (µs);
// the candidate F is their maximum + 1. F is handed out only once a
// majority S of the nodes stored it with "set if greater" over a counter
// below F (a node already at or beyond F makes the client try again above
// it). Why F then beats every earlier fence F' (stored on majority S'):
// the lock of the earlier holder had to end on some node of our granting
// majority before that node granted us, and it ended after S' stored F'
// (F' is stored within its holder's validity, before its release). Our
// store round starts after our grants, so after S' stored F'. S and S'
// share a node x; x's counter was >= F' when our store reached it, and it
// accepted F only over a smaller counter: F > F'.
//
// Readers (--shared) hold a share on a majority the same way, with the
// same validity, fences and taking back; each node's scripts refuse a
// reader where the writer's key is and the writer where a live reader is,
// and two majorities share a node: a reader and a writer never both hold
// the name. No writer preference: readers that keep overlapping can starve
// a writer. The fence argument above holds for any two holders, readers
// or writers; readers holding at once get different fences.
//
// Limits. If x lost its data (a restart without persistence) and is the
// only node S and S' share (with 5 nodes two majorities can share one),
// the counter argument fails; F is then greater only through its clock
// part (the server time in µs at our grant, normally later than any
// earlier fence). Keeping a node that lost data out for longer than the
// longest ttl (delayed restart) keeps the lock exclusive, not the counter.
std::unique_ptr<Backend> create_redlock_backend(const BackendConfig &config);

} // namespace dlock::backend::redis
