#pragma once

#include "backend/backend.hpp"
#include "backend/redis/common.hpp"
#include "backend/redis/nodes.hpp"

#include <string>
#include <vector>

// What the Redlock backend needs beside its class (redlock_backend.cpp):
// requests, reading the nodes' answers, and the readers of a shared lock
// (--shared) as a majority sees them.
namespace dlock::backend::redis {

std::string format_command(const std::vector<std::string> &command);

// Integer `index` of a node's first reply (an array of integers or integer
// strings, or an integer when `index` is 0); -1 when there is none.
long long integer_at(const NodeAnswer &answer, std::size_t index);

// EVAL of one of redlock_scripts.hpp's scripts on a lock's five keys.
std::vector<std::string> redlock_command(const std::string &script, const Keys &keys,
                                         std::initializer_list<std::string> args);

// Fills in the readers of `status` from the nodes' answers to the status
// script: a reader holds the name when a majority of the nodes that
// answered `majority` or more list it live; its time left is the
// majority-th longest of theirs, its fence the largest they recorded. Does
// nothing when a writer holds the name (status.held). Returns the largest
// number of nodes any one reader is live on.
std::size_t add_majority_readers(LockStatus &status, const std::vector<NodeAnswer> &answers, std::size_t majority);

} // namespace dlock::backend::redis
