#pragma once

#include "core/unique_fd.hpp"

#include <string>

// News of held lock files, for the file backend's event_fd(): readable
// when a held file loses its name (release --force renames a fresh file
// over it, or someone removes or moves it), so that its holder stops the
// job at once instead of at its next renewal, which for `acquire -t 1d`
// is 8 hours away. One inotify instance; one watch per held file, on its
// inode (reached through the descriptor, as the name may point elsewhere
// already): its link count changing (IN_ATTRIB) or the file moving. The
// holder's own record writes (IN_MODIFY) and other processes opening the
// file are not watched, so the descriptor stays quiet while nothing
// happens. Without inotify (fs.inotify limits reached) the lock works as
// before and a forced release is noticed at the next renewal.
namespace dlock::backend::file {

class FileNews {
public:
  // The watch of the lock file open at `file_fd`, or -1 (said at -v).
  int watch(int file_fd, const std::string &path);
  void unwatch(int watch);
  // Reads every pending event: the renewal that follows checks the file.
  void drain();
  int fd() const { return m_inotify.get(); }

private:
  UniqueFd m_inotify;
};

} // namespace dlock::backend::file
