#pragma once

#include "backend/backend.hpp"

#include <memory>

namespace dlock::backend::file {

// The default backend: one file per lock name, held with flock(2). The
// kernel drops the lock when the holding process dies, so a dead holder
// never blocks anyone; waiting blocks in the kernel. The file's content is
// the holder record (JSON) and the fence counter. T is nominal (--ttl): the
// lock lasts as long as the holding process, and renewals only check that
// nobody broke it with `release --force`.
std::unique_ptr<Backend> create_file_backend(const BackendConfig &config);

} // namespace dlock::backend::file
