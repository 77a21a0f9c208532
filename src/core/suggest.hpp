#pragma once

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace dlock {

// Optimal string alignment distance: insertions, deletions, substitutions
// and transpositions of neighbours ("wiat" for "wait") cost one each.
std::size_t edit_distance(std::string_view a, std::string_view b);

// Whether `distance` edits still make `word` a likely typo: one edit for
// short words, two from five letters on, never as many as the word has
// letters ("-x" is not a typo of "-q").
inline bool close_enough(std::string_view word, std::size_t distance) {
  return distance <= (word.size() >= 5 ? 2u : 1u) && distance < word.size();
}

// The position in `candidates` of the one nearest to `word`, for "did you
// mean ...?", after `key` maps each to what is compared (e.g. without
// leading dashes); nullopt if none is close enough.
template <typename Candidates, typename Key>
std::optional<std::size_t> nearest(std::string_view word, const Candidates &candidates, Key key) {
  std::optional<std::size_t> best;
  std::size_t best_distance = 0, index = 0;
  for (const auto &candidate : candidates) {
    std::size_t distance = edit_distance(word, key(candidate));
    if (close_enough(word, distance) && (!best || distance < best_distance)) {
      best = index;
      best_distance = distance;
    }
    ++index;
  }
  return best;
}

// The candidate nearest to `word` as it is, or "".
template <typename Candidates> std::string closest_word(std::string_view word, const Candidates &candidates) {
  auto found = nearest(word, candidates, [](const auto &candidate) { return std::string_view(candidate); });
  if (!found) return {};
  auto it = std::begin(candidates);
  std::advance(it, static_cast<std::ptrdiff_t>(*found));
  return std::string(*it);
}

} // namespace dlock
