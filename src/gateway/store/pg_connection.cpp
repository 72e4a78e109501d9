#include "gateway/store/pg_connection.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace arbiter::store {

namespace {

constexpr auto kRoundTrip = std::chrono::seconds(10);
constexpr auto kConnect = std::chrono::seconds(5);
// A failed connection is not tried again for this long: a start reads the
// store right after opening it, and would wait out a second deadline.
constexpr auto kConnectRetry = std::chrono::seconds(1);

using Deadline = std::chrono::steady_clock::time_point;

// Whether the socket became ready for `events` before the deadline.
bool wait_socket(PGconn* conn, short events, Deadline deadline) {
  pollfd p{.fd = PQsocket(conn), .events = events, .revents = 0};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int PgConnection::Result::rows() const { return r_ ? PQntuples(r_.get()) : 0; }
int PgConnection::Result::columns() const { return r_ ? PQnfields(r_.get()) : 0; }
std::string PgConnection::Result::text(int row, int col) const { return PQgetvalue(r_.get(), row, col); }
int64_t PgConnection::Result::i64(int row, int col) const {
  return std::strtoll(PQgetvalue(r_.get(), row, col), nullptr, 10);
}
double PgConnection::Result::real(int row, int col) const {
  return std::strtod(PQgetvalue(r_.get(), row, col), nullptr);
}
void PgConnection::Result::Clear::operator()(pg_result* r) const { PQclear(r); }

std::optional<std::string> PgConnection::conninfo_error(const std::string& conninfo, bool allow_password) {
  char* message = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &message);
  if (options == nullptr) {
    std::string why = message ? trimmed(message) : "cannot be parsed";
    PQfreemem(message);
    return why;
  }
  bool password = false;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    password = password || (std::string_view(o->keyword) == "password" && o->val != nullptr && *o->val != '\0');
  }
  PQconninfoFree(options);
  if (password && !allow_password) {
    return "holds a password: put the whole string in an environment variable named by url_env, or the password in "
           "PGPASSWORD or a passfile";
  }
  return std::nullopt;
}

bool PgConnection::up() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }

void PgConnection::drop() {
  if (conn_) PQfinish(conn_);
  conn_ = nullptr;
}

std::expected<void, std::string> PgConnection::connect(const std::function<std::expected<void, std::string>()>& setup) {
  if (up()) return {};
  drop();
  const auto now = std::chrono::steady_clock::now();
  if (!failed_why_.empty() && now - failed_at_ < kConnectRetry) return std::unexpected(failed_why_);
  auto connected = open(now + kConnect);
  if (connected) {
    ++generation_;
    if (setup) connected = setup();
  }
  if (!connected) {
    drop();
    failed_at_ = now;
    failed_why_ = connected.error();
    return connected;
  }
  failed_why_.clear();
  return {};
}

std::expected<void, std::string> PgConnection::open(Deadline deadline) {
  // Defaults before dbname (the connection string, expanded): its own
  // settings win.
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"5", "arbiter", conninfo_.c_str(), nullptr};
  conn_ = PQconnectStartParams(keys, values, 1);
  if (conn_ == nullptr) return std::unexpected("PostgreSQL: out of memory");
  auto fail = [&](std::string why) -> std::expected<void, std::string> {
    drop();
    return std::unexpected("PostgreSQL: " + why);
  };
  if (PQstatus(conn_) == CONNECTION_BAD) return fail(trimmed(PQerrorMessage(conn_)));
  PostgresPollingStatusType polling = PGRES_POLLING_WRITING;
  while (polling != PGRES_POLLING_OK) {
    if (polling == PGRES_POLLING_FAILED) return fail(trimmed(PQerrorMessage(conn_)));
    if (!wait_socket(conn_, polling == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline)) {
      return fail("no connection within 5 s");
    }
    polling = PQconnectPoll(conn_);
  }
  if (PQsetnonblocking(conn_, 1) != 0) return fail(trimmed(PQerrorMessage(conn_)));
  // The server's notices ("schema arbiter already exists, skipping") would
  // go to stderr between the gateway's JSON lines.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  return {};
}

std::expected<PgConnection::Result, std::string> PgConnection::run(const char* sql,
                                                                     const std::vector<std::string>& params) {
  if (conn_ == nullptr) return std::unexpected("PostgreSQL: not connected");
  const Deadline deadline = std::chrono::steady_clock::now() + kRoundTrip;
  auto lost = [&](std::string why) -> std::expected<Result, std::string> {
    drop();
    return std::unexpected("PostgreSQL: " + why);
  };
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  const int sent = params.empty() ? PQsendQuery(conn_, sql)
                                  : PQsendQueryParams(conn_, sql, static_cast<int>(values.size()), nullptr,
                                                      values.data(), nullptr, nullptr, 0);
  if (!sent) return lost(trimmed(PQerrorMessage(conn_)));
  for (int pending; (pending = PQflush(conn_)) != 0;) {
    if (pending < 0 || !wait_socket(conn_, POLLIN | POLLOUT, deadline)) return lost("no answer within 10 s");
    if (!PQconsumeInput(conn_)) return lost(trimmed(PQerrorMessage(conn_)));
  }
  Result last;
  std::string error;
  for (;;) {
    while (PQisBusy(conn_)) {
      if (!wait_socket(conn_, POLLIN, deadline)) return lost("no answer within 10 s");
      if (!PQconsumeInput(conn_)) return lost(trimmed(PQerrorMessage(conn_)));
    }
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) break;
    const ExecStatusType status = PQresultStatus(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && error.empty()) {
      error = trimmed(PQresultErrorMessage(r));
    }
    last = Result(r);
  }
  // A statement's error drops the connection too: its transaction goes
  // with it, and the next call starts from what the server holds.
  if (!error.empty()) return lost(error);
  if (PQstatus(conn_) != CONNECTION_OK) return lost(trimmed(PQerrorMessage(conn_)));
  return last;
}

std::expected<void, std::string> PgConnection::run_all(std::initializer_list<const char*> statements) {
  for (const char* sql : statements) {
    if (auto done = run(sql); !done) return std::unexpected(done.error());
  }
  return {};
}

}  // namespace arbiter::store
