// The Batch API's routes on the public listener (docs/batches.md), in
// OpenAI's shapes: /v1/files (upload, list, retrieve, content, delete) and
// /v1/batches (create, retrieve, list, cancel). The caller authenticates as
// for inference; a tenant sees only its own files and batches.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "gateway/batch/batch_book.hpp"
#include "gateway/runtime.hpp"
#include "http/client_connection.hpp"
#include "http/server.hpp"

namespace arbiter::batch {

class BatchRoutes {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  explicit BatchRoutes(BatchBook& book) : book_(book) {}

  // /v1/files, /v1/batches and what is below them.
  static bool serves(std::string_view path);

  // Answers one request; `headers`: x-request-id and CORS's.
  Task<void> handle(HttpRequest& req, ClientConnection& conn, std::string_view path, const Runtime& runtime,
                    const Headers& headers);

 private:
  // What a request is answered: a body, or an error.
  struct Reply {
    std::string body;
    std::string_view content_type = "application/json";
    std::optional<ApiError> error;
    static Reply json(const boost::json::value& v) { return {boost::json::serialize(v), "application/json", std::nullopt}; }
    static Reply failed(ApiError e) { return {{}, {}, std::move(e)}; }
  };
  Reply answer(HttpRequest& req, ClientConnection& conn, std::string_view path, const Runtime& runtime);
  Reply files(HttpRequest& req, std::string_view rest, const std::string& tenant, const Runtime& runtime);
  Reply upload(HttpRequest& req, const std::string& tenant, const Runtime& runtime);
  Reply batches(HttpRequest& req, std::string_view rest, const std::string& tenant, const TenantConfig* config);

  BatchBook& book_;
};

}  // namespace arbiter::batch
