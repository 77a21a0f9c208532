#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dlock {

// Levenshtein distance: insertions, deletions and substitutions.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The word among `candidates` closest to `word`, for "did you mean ...?":
// at most 2 edits away (1 for words of up to 4 letters), or empty.
template <typename Candidates> std::string closest_word(std::string_view word, const Candidates &candidates) {
  std::string best;
  std::size_t limit = word.size() <= 4 ? 1 : 2, best_distance = limit + 1;
  for (const auto &candidate : candidates) {
    std::string_view text(candidate);
    std::size_t distance = edit_distance(word, text);
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(text);
    }
  }
  return best;
}

} // namespace dlock
