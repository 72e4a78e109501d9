#include "core/classifier.hpp"

#include <algorithm>

namespace arbiter {

namespace {
template <class T, class U>
bool contains_or_empty(const std::vector<T>& set, const U& value) {
  return set.empty() || std::find(set.begin(), set.end(), value) != set.end();
}
}  // namespace

Classifier::Classifier(const std::vector<ClassConfig>& classes, std::string_view default_class)
    : classes_(classes) {
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    if (classes_[i].name == default_class) default_index_ = i;
  }
}

bool Classifier::allowed(const TenantConfig* tenant, const ClassConfig& cls) const {
  return tenant == nullptr || contains_or_empty(tenant->allowed_classes, cls.name);
}

bool Classifier::outranks_default(const ClassConfig& cls) const {
  const sched::ClassPolicy& base = classes_[default_index_].policy;
  return cls.policy.engine_priority < base.engine_priority || cls.policy.min_share > base.min_share;
}

bool Classifier::claimable(const TenantConfig* tenant, const ClassConfig& cls) const {
  if (!outranks_default(cls)) return allowed(tenant, cls);
  return tenant != nullptr &&
         std::find(tenant->allowed_classes.begin(), tenant->allowed_classes.end(), cls.name) !=
             tenant->allowed_classes.end();
}

bool Classifier::matches(const ClassMatch& m, const ClassifyInput& in) {
  if (!contains_or_empty(m.routes, in.route)) return false;
  if (!contains_or_empty(m.models, in.model)) return false;
  if (!m.tenants.empty() && (in.tenant == nullptr || !contains_or_empty(m.tenants, in.tenant->name))) {
    return false;
  }
  // A request without max_tokens may generate up to the context length: it
  // satisfies any lower bound and no upper bound.
  if (m.max_tokens_at_least && in.max_tokens && *in.max_tokens < *m.max_tokens_at_least) return false;
  if (m.max_tokens_at_most && (!in.max_tokens || *in.max_tokens > *m.max_tokens_at_most)) return false;
  return true;
}

std::expected<std::size_t, ApiError> Classifier::classify(const ClassifyInput& in) const {
  if (in.claimed) {
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      if (classes_[i].name != *in.claimed) continue;
      if (claimable(in.tenant, classes_[i])) return i;
      const std::string who = in.tenant ? "tenant '" + in.tenant->name + "'" : std::string("an anonymous client");
      const std::string why = allowed(in.tenant, classes_[i])
                                  ? " (it outranks the default class '" + classes_[default_index_].name +
                                        "': a tenant must list it in allowed_classes to claim it)"
                                  : "";
      return std::unexpected(ApiError{ErrorCode::kForbidden,
                                      who + " may not use class '" + classes_[i].name + "'" + why,
                                      "x-arbiter-class", {}});
    }
    return std::unexpected(ApiError{ErrorCode::kInvalidRequest,
                                    "unknown request class '" + std::string(*in.claimed) + "'",
                                    "x-arbiter-class", {}});
  }
  for (std::size_t i = 0; i < classes_.size(); ++i) {
    const auto& cls = classes_[i];
    if (cls.match && matches(*cls.match, in) && allowed(in.tenant, cls)) return i;
  }
  if (allowed(in.tenant, classes_[default_index_])) return default_index_;
  return std::unexpected(ApiError{ErrorCode::kForbidden,
                                  "no class matches this request that tenant '" + in.tenant->name +
                                      "' is allowed to use",
                                  {}, {}});
}

}  // namespace arbiter
