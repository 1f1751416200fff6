// Work waiting per allocation in one process, for that allocation's next transaction.
// A key is present while its job is queued or running: the first item added for an
// absent key asks the caller to schedule the job, later items ride along with it.
//
// Thread safety: every method is thread-safe.
#pragma once

#include <algorithm>
#include <iterator>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace cairva::store::pg {

template <class Item>
class Waiting {
 public:
  // Queues `item` for `key`; true when the caller must schedule the key's job.
  bool add(const std::string& key, Item item) {
    std::lock_guard lock(mu_);
    auto [it, added] = waiting_.try_emplace(key);
    it->second.push_back(std::move(item));
    return added;
  }
  // The job's share: up to `max` items, oldest first. `more` tells whether items stay
  // (the job must schedule itself again); otherwise the key is gone and the next add()
  // schedules a new job.
  std::vector<Item> take(const std::string& key, size_t max, bool& more) {
    std::vector<Item> out;
    std::lock_guard lock(mu_);
    more = false;
    auto it = waiting_.find(key);
    if (it == waiting_.end()) return out;
    std::vector<Item>& items = it->second;
    const auto end = items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), max));
    out.assign(std::make_move_iterator(items.begin()), std::make_move_iterator(end));
    items.erase(items.begin(), end);
    more = !items.empty();
    if (!more) waiting_.erase(it);
    return out;
  }
  // Everything waiting for `key` (its job could not be scheduled).
  std::vector<Item> drain(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = waiting_.find(key);
    if (it == waiting_.end()) return {};
    std::vector<Item> out = std::move(it->second);
    waiting_.erase(it);
    return out;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<Item>> waiting_;  // GUARDED_BY(mu_)
};

}  // namespace cairva::store::pg
