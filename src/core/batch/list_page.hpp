// One page of a list the Batch API answers (its files, its batches), as
// OpenAI pages them: the items after the one whose id is `after`, at most
// `limit`. Pure.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

namespace arbiter::batch {

// `sorted`'s page after the item `id_of` names `after` (empty: from the
// first; an id it does not hold: nothing); `more`: items are left past the
// page.
template <class T, class IdOf>
std::vector<T> page_after(std::vector<T> sorted, std::string_view after, std::size_t limit, IdOf id_of, bool& more) {
  auto from = sorted.begin();
  if (!after.empty()) {
    from = std::find_if(sorted.begin(), sorted.end(), [&](const T& item) { return id_of(item) == after; });
    if (from != sorted.end()) ++from;
  }
  const std::size_t left = static_cast<std::size_t>(sorted.end() - from);
  const std::size_t taken = std::min(limit, left);
  more = left > taken;
  return std::vector<T>(std::make_move_iterator(from), std::make_move_iterator(from + taken));
}

}  // namespace arbiter::batch
