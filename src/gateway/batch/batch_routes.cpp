#include "gateway/batch/batch_routes.hpp"

#include <charconv>

#include <boost/json.hpp>

#include "core/batch/batch_input.hpp"
#include "core/multipart_form.hpp"
#include "core/tenants.hpp"
#include "gateway/admin/percent_decode.hpp"
#include "gateway/error_response.hpp"

namespace arbiter::batch {

namespace {

constexpr std::string_view kFiles = "/v1/files";
constexpr std::string_view kBatches = "/v1/batches";

Task<void> send_body(ClientConnection& conn, const BatchRoutes::Headers& headers, std::string body,
                     std::string_view content_type = "application/json") {
  http::response<http::string_body> res{http::status::ok, 11};
  res.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) res.set(name, value);
  res.body() = std::move(body);
  co_await conn.send(res);
}

ApiError not_found(std::string what) { return ApiError{ErrorCode::kNotFound, "no " + what, {}, {}}; }

ApiError wrong_method(std::string_view allowed) {
  return ApiError{ErrorCode::kMethodNotAllowed, "use " + std::string(allowed) + " here", {}, {}};
}

// A query parameter's value, decoded; empty when absent.
std::string query_param(std::string_view target, std::string_view key) {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) return {};
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    const std::size_t eq = item.find('=');
    if (item.substr(0, eq) != key) continue;
    return eq == std::string_view::npos ? std::string() : percent_decoded(item.substr(eq + 1)).value_or(std::string());
  }
  return {};
}

// ?limit=: 1..max, `absent` when not given (OpenAI's: 20 batches, 10,000
// files); nullopt when it is not a number in range.
std::optional<std::size_t> limit_param(std::string_view target, std::size_t absent, std::size_t max) {
  const std::string text = query_param(target, "limit");
  if (text.empty()) return absent;
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n < 1 || n > max) return std::nullopt;
  return n;
}

// "/{id}/more" after a collection's path: the id, and "/more" (or empty).
std::pair<std::string, std::string_view> id_and_rest(std::string_view rest) {
  rest.remove_prefix(1);
  const std::size_t slash = rest.find('/');
  return {std::string(rest.substr(0, slash)), slash == std::string_view::npos ? std::string_view() : rest.substr(slash)};
}

// A page of a list: its items, the first and last ids, whether more follow.
boost::json::object page_of(boost::json::array data, bool more) {
  const boost::json::value first = data.empty() ? boost::json::value(nullptr) : data.front().at("id");
  const boost::json::value last = data.empty() ? boost::json::value(nullptr) : data.back().at("id");
  return {{"object", "list"}, {"data", std::move(data)}, {"first_id", first}, {"last_id", last}, {"has_more", more}};
}

}  // namespace

bool BatchRoutes::serves(std::string_view path) {
  for (const std::string_view root : {kFiles, kBatches}) {
    if (path == root || (path.starts_with(root) && path[root.size()] == '/')) return true;
  }
  return false;
}

Task<void> BatchRoutes::handle(HttpRequest& req, ClientConnection& conn, std::string_view path,
                               const Runtime& runtime, const Headers& headers) {
  // Answered in plain functions on the Batch API's worker thread (the
  // database may wait, an upload is written and synced), sent here: GCC 12
  // miscompiles JSON initializer lists inside coroutines.
  Reply reply = co_await book_.on_worker([&] { return answer(req, conn, path, runtime); });
  if (reply.error) {
    co_await send_error(conn, *reply.error, headers);
  } else {
    co_await send_body(conn, headers, std::move(reply.body), reply.content_type);
  }
}

BatchRoutes::Reply BatchRoutes::answer(HttpRequest& req, ClientConnection& conn, std::string_view path,
                                       const Runtime& runtime) {
  auto who = runtime.tenants.authenticate(req["authorization"], conn.peer_names());
  if (!who) return Reply::failed(std::move(who.error()));
  const TenantConfig* config = *who;
  const std::string tenant = config ? config->name : std::string(kAnonymousTenant);
  if (path.starts_with(kFiles)) return files(req, path.substr(kFiles.size()), tenant, runtime);
  return batches(req, path.substr(kBatches.size()), tenant, config);
}

BatchRoutes::Reply BatchRoutes::upload(HttpRequest& req, const std::string& tenant, const Runtime& runtime) {
  // multipart/form-data with `purpose` and `file`.
  auto boundary = form_boundary(req["content-type"]);
  if (!boundary) return Reply::failed(ApiError{ErrorCode::kInvalidRequest, boundary.error(), {}, {}});
  auto parts = parse_form(req.body(), *boundary);
  if (!parts) return Reply::failed(ApiError{ErrorCode::kInvalidRequest, parts.error(), {}, {}});
  const FormPart* file = nullptr;
  std::string purpose;
  std::optional<std::string_view> anchor;
  std::optional<std::string_view> seconds;
  for (const FormPart& p : *parts) {
    if (p.name == "file") file = &p;
    if (p.name == "purpose") purpose = std::string(p.content);
    // OpenAI's expires_after, as its clients send an object in a form.
    if (p.name == "expires_after[anchor]") anchor = p.content;
    if (p.name == "expires_after[seconds]") seconds = p.content;
  }
  if (purpose != "batch") {
    return Reply::failed(ApiError{ErrorCode::kInvalidRequest, "purpose must be 'batch' (the only files this gateway keeps)", "purpose", {}});
  }
  if (file == nullptr) return Reply::failed(ApiError{ErrorCode::kInvalidRequest, "the form has no 'file' part", "file", {}});
  // Kept 30 days unless the client says otherwise (OpenAI's default for purpose batch).
  int64_t expires_after = kMaxExpirySeconds;
  if (anchor || seconds) {
    int64_t n = 0;
    const std::string_view text = seconds.value_or("");
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    const bool number = !text.empty() && ec == std::errc{} && end == text.data() + text.size();
    if (auto why = number ? expiry_error(anchor.value_or(""), n) : "expires_after.seconds must be a whole number") {
      return Reply::failed(ApiError{ErrorCode::kInvalidRequest, *why, "expires_after", {}});
    }
    expires_after = n;
  }
  const Input input = read_input(file->content, runtime.config.batches.max_lines);
  if (!input.errors.empty()) {
    return Reply::failed(ApiError{ErrorCode::kInvalidRequest, "the file is not a batch input: " + describe(input.errors), "file", {}});
  }
  // The tenant's files bounded in all (two uploads at once may both pass:
  // the bound is checked, not reserved).
  const std::size_t bound = runtime.config.batches.max_tenant_bytes;
  auto held = book_.files().tenant_bytes(tenant);
  if (!held) return Reply::failed(store_error(held.error()));
  if (*held + file->content.size() > bound) {
    return Reply::failed(ApiError{ErrorCode::kInvalidRequest,
                                  "this tenant's files hold " + std::to_string(*held) + " bytes; this one's " +
                                      std::to_string(file->content.size()) + " would pass its " +
                                      std::to_string(bound) +
                                      " (batches.max_tenant_bytes): delete files, or wait for them to expire",
                                  "file", {}});
  }
  auto added = book_.files().add(tenant, file->filename.empty() ? "input.jsonl" : file->filename, purpose,
                                 file->content, expires_after);
  if (!added) return Reply::failed(ApiError{ErrorCode::kInternal, "the file could not be stored: " + added.error(), {}, {}});
  return Reply::json(to_api(*added));
}

BatchRoutes::Reply BatchRoutes::files(HttpRequest& req, std::string_view rest, const std::string& tenant,
                                      const Runtime& runtime) {
  FileStore& store = book_.files();
  const http::verb method = req.method();
  if (rest.empty() || rest == "/") {
    if (method == http::verb::post) return upload(req, tenant, runtime);
    if (method != http::verb::get) return Reply::failed(wrong_method("GET or POST"));
    const auto limit = limit_param(req.target(), 10'000, 10'000);
    if (!limit) return Reply::failed(ApiError{ErrorCode::kInvalidRequest, "limit must be in [1, 10000]", "limit", {}});
    const std::string order = query_param(req.target(), "order");
    if (!order.empty() && order != "asc" && order != "desc") {
      return Reply::failed(ApiError{ErrorCode::kInvalidRequest, "order must be asc or desc", "order", {}});
    }
    bool more = false;
    auto page = store.list(tenant, query_param(req.target(), "purpose"), query_param(req.target(), "after"), *limit,
                           order == "asc", more);
    if (!page) return Reply::failed(store_error(page.error()));
    boost::json::array data;
    for (const FileInfo& f : *page) data.push_back(to_api(f));
    return Reply::json(page_of(std::move(data), more));
  }
  // /{id} or /{id}/content
  const auto [id, sub] = id_and_rest(rest);
  if (sub == "/content") {
    if (method != http::verb::get) return Reply::failed(wrong_method("GET"));
    auto bytes = store.content(tenant, id);
    if (!bytes) return Reply::failed(store_error(bytes.error()));
    if (!*bytes) return Reply::failed(not_found("file '" + id + "'"));
    return Reply{.body = std::move(**bytes), .content_type = "application/jsonl", .error = std::nullopt};
  }
  if (!sub.empty()) return Reply::failed(ApiError{ErrorCode::kNotFound, "no such route", {}, {}});
  if (method == http::verb::get) {
    auto info = store.find(tenant, id);
    if (!info) return Reply::failed(store_error(info.error()));
    if (*info) return Reply::json(to_api(**info));
    return Reply::failed(not_found("file '" + id + "'"));
  }
  if (method != http::verb::delete_) return Reply::failed(wrong_method("GET or DELETE"));
  auto removed = store.remove(tenant, id);
  if (!removed) return Reply::failed(store_error(removed.error()));
  if (!*removed) return Reply::failed(not_found("file '" + id + "'"));
  return Reply::json(boost::json::object{{"id", id}, {"object", "file"}, {"deleted", true}});
}

BatchRoutes::Reply BatchRoutes::batches(HttpRequest& req, std::string_view rest, const std::string& tenant,
                                        const TenantConfig* config) {
  const http::verb method = req.method();
  if (rest.empty() || rest == "/") {
    if (method == http::verb::post) {
      boost::system::error_code ec;
      const boost::json::value body = boost::json::parse(req.body(), ec);
      if (ec || !body.is_object()) return Reply::failed(ApiError{ErrorCode::kInvalidJson, "the body must be a JSON object", {}, {}});
      auto job = book_.create(tenant, config, body.get_object());
      if (!job) return Reply::failed(std::move(job.error()));
      return Reply::json(to_api(*job));
    }
    if (method != http::verb::get) return Reply::failed(wrong_method("GET or POST"));
    const auto limit = limit_param(req.target(), 20, 100);
    if (!limit) return Reply::failed(ApiError{ErrorCode::kInvalidRequest, "limit must be in [1, 100]", "limit", {}});
    bool more = false;
    auto page = book_.list(tenant, query_param(req.target(), "after"), *limit, more);
    if (!page) return Reply::failed(std::move(page.error()));
    boost::json::array data;
    for (const Job& j : *page) data.push_back(to_api(j));
    return Reply::json(page_of(std::move(data), more));
  }
  const auto [id, sub] = id_and_rest(rest);
  if (sub == "/cancel") {
    if (method != http::verb::post) return Reply::failed(wrong_method("POST"));
    auto job = book_.cancel(tenant, id);
    if (!job) return Reply::failed(std::move(job.error()));
    return Reply::json(to_api(*job));
  }
  if (!sub.empty()) return Reply::failed(ApiError{ErrorCode::kNotFound, "no such route", {}, {}});
  if (method != http::verb::get) return Reply::failed(wrong_method("GET"));
  auto job = book_.find(tenant, id);
  if (!job) return Reply::failed(std::move(job.error()));
  if (*job) return Reply::json(to_api(**job));
  return Reply::failed(not_found("batch '" + id + "'"));
}

}  // namespace arbiter::batch
