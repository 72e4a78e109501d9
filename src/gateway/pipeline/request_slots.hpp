// Per-request state a feature keeps on the request without a field of its
// own in RequestContext (issue 42): one slot per type, made when the feature
// first needs it (a quota reservation, later a cache entry or an audit
// record), destroyed with the request. The context knows no feature's
// types, so the pipeline folder depends on none of them. A request no
// feature keeps anything for allocates nothing here.
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace arbiter {

class RequestSlots {
 public:
  // The slot of type T, made now (replacing one there was).
  template <class T, class... Args>
  T& emplace(Args&&... args) {
    reset<T>();
    auto value = std::make_unique<T>(std::forward<Args>(args)...);
    T& ref = *value;
    slots_.push_back({key<T>(), Owned(value.release(), [](void* p) { delete static_cast<T*>(p); })});
    return ref;
  }
  // The slot of type T, or null. Observers see the context const and may
  // still settle what a slot holds (a quota reservation).
  template <class T>
  T* get() const {
    for (const Slot& s : slots_) {
      if (s.type == key<T>()) return static_cast<T*>(s.value.get());
    }
    return nullptr;
  }
  template <class T>
  void reset() {
    std::erase_if(slots_, [](const Slot& s) { return s.type == key<T>(); });
  }

 private:
  using Owned = std::unique_ptr<void, void (*)(void*)>;
  struct Slot {
    const void* type;
    Owned value;
  };
  // One address per type: its identity without RTTI.
  template <class T>
  static const void* key() {
    static const char tag = 0;
    return &tag;
  }
  std::vector<Slot> slots_;  // a few at most: searched in order
};

}  // namespace arbiter
