// Assigns every request its class: an explicit x-arbiter-class claim (only
// for classes the tenant is allowed), else the first class whose rules match,
// else the default class. A class that outranks the default class (a better
// priority, or a larger min_share) is granted by claim only to tenants that
// list it in allowed_classes: an unlisted tenant, or an anonymous client,
// cannot promote its own traffic by sending a header.
#pragma once

#include <cstddef>
#include <expected>
#include <optional>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"

namespace arbiter {

struct ClassifyInput {
  Route route = Route::kChatCompletions;
  std::string_view model;
  const TenantConfig* tenant = nullptr;      // nullptr: anonymous
  std::optional<std::string_view> claimed;   // x-arbiter-class header
  std::optional<int64_t> max_tokens;         // as requested
};

class Classifier {
 public:
  // `classes` must outlive the classifier; `default_class` must name one.
  Classifier(const std::vector<ClassConfig>& classes, std::string_view default_class);

  // Index into the classes vector, or 400 (unknown class) / 403 (not allowed).
  std::expected<std::size_t, ApiError> classify(const ClassifyInput& in) const;

 private:
  bool allowed(const TenantConfig* tenant, const ClassConfig& cls) const;  // by rule
  // By claim: allowed(), and a class that outranks the default is listed.
  bool claimable(const TenantConfig* tenant, const ClassConfig& cls) const;
  bool outranks_default(const ClassConfig& cls) const;
  static bool matches(const ClassMatch& m, const ClassifyInput& in);

  const std::vector<ClassConfig>& classes_;
  std::size_t default_index_ = 0;
};

}  // namespace arbiter
