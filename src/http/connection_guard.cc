#include "http/connection_guard.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include "core/stats.h"

namespace infertel::http {
namespace asio = boost::asio;

struct ConnectionSlot::State {
  std::shared_ptr<ConnectionTable> table;
  asio::any_io_executor executor;  // the socket's
  std::function<void()> close;     // closes the socket; empty once the slot is released
  bool alive = true;               // guarded by the table's mutex
  bool reading = false;
  ConnectionTable::Reading::iterator pos;  // in the table's reading list while `reading`
};

namespace {

// At most one line per 10 s per process for each kind: a flood must not flood the log too.
void LogRateLimited(std::atomic<std::int64_t>* last_log, std::string_view what) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_log->load(std::memory_order_relaxed);
  if (now - last >= 10 && last_log->compare_exchange_strong(last, now))
    spdlog::warn("HTTP server: {}", what);
}

// Written without waiting (the socket's send buffer is empty on a new connection); whatever
// does not fit is lost with the connection, which the caller then closes.
void Refuse503(int fd) {
  static constexpr std::string_view kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n"
      "Content-Type: text/plain\r\nContent-Length: 22\r\n\r\ntoo many connections\r\n";
  [[maybe_unused]] const ssize_t n =
      ::send(fd, kBusy.data(), kBusy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_RDWR);
}

}  // namespace

void ConnectionStats::Register(StatsRegistry* registry, std::string_view family,
                               std::string_view open_family) const {
  constexpr std::string_view kHelp =
      "Connections closed by the server's guard: refused at the connection cap, evicted to make "
      "room, or past a read timeout";
  for (const auto& [reason, counter] :
       {std::pair{"connection_limit", &connection_limit}, std::pair{"evicted", &evicted},
        std::pair{"idle_timeout", &idle_timeout}, std::pair{"header_timeout", &header_timeout},
        std::pair{"body_timeout", &body_timeout}}) {
    registry->Add(std::string(family), std::string(kHelp), StatsRegistry::Type::kCounter,
                  fmt::format(R"(reason="{}")", reason), counter);
  }
  registry->Add(std::string(open_family), "Client connections open now",
                StatsRegistry::Type::kGauge, "", &open);
}

ConnectionSlot::~ConnectionSlot() { state_->table->Release(*state_); }

void ConnectionSlot::Reading() { state_->table->SetReading(state_, true); }
void ConnectionSlot::Answering() { state_->table->SetReading(state_, false); }
const ConnectionLimits& ConnectionSlot::limits() const { return state_->table->limits(); }
ConnectionStats& ConnectionSlot::stats() const { return state_->table->stats(); }

std::unique_ptr<ConnectionSlot> ConnectionTable::Admit(asio::any_io_executor executor, int fd,
                                                       std::function<void()> close) {
  static std::atomic<std::int64_t> last_log{0};
  {
    std::lock_guard lock(mu_);
    if (open_ < limits_.max_connections || EvictOldestLocked()) {
      ++open_;
      stats_->open.fetch_add(1, std::memory_order_relaxed);
      auto state = std::make_shared<ConnectionSlot::State>();
      state->table = shared_from_this();
      state->executor = std::move(executor);
      state->close = std::move(close);
      return std::unique_ptr<ConnectionSlot>(new ConnectionSlot(std::move(state)));
    }
  }
  stats_->connection_limit.fetch_add(1, std::memory_order_relaxed);
  LogRateLimited(&last_log, "connection cap reached with every connection busy: refused (503)");
  Refuse503(fd);
  close();
  return nullptr;
}

// Closes the connection that started reading its request first, from its own executor. Its
// place is given to the new connection at once (so `open_` may pass the cap by the evicted
// connections still closing); false when no connection is reading.
bool ConnectionTable::EvictOldestLocked() {
  static std::atomic<std::int64_t> last_log{0};
  if (reading_.empty()) return false;
  std::shared_ptr<ConnectionSlot::State> victim = std::move(reading_.front());
  reading_.pop_front();
  victim->reading = false;
  --open_;
  stats_->open.fetch_sub(1, std::memory_order_relaxed);
  victim->alive = false;  // its slot no longer counts; Release leaves the counts alone
  auto ex = victim->executor;
  asio::post(ex, [victim = std::move(victim)] {
    // Runs on the connection's executor; the socket is still there while `close` is set,
    // since the session's slot keeps the socket's owner alive until it is released.
    std::lock_guard lock(victim->table->mu_);
    if (victim->close) victim->close();
  });
  stats_->evicted.fetch_add(1, std::memory_order_relaxed);
  LogRateLimited(&last_log, "connection cap reached: closed the connection reading longest");
  return true;
}

void ConnectionTable::Release(ConnectionSlot::State& state) {
  std::lock_guard lock(mu_);
  state.close = nullptr;
  if (state.reading) reading_.erase(state.pos);
  state.reading = false;
  if (!state.alive) return;  // evicted: already given back
  state.alive = false;
  --open_;
  stats_->open.fetch_sub(1, std::memory_order_relaxed);
}

void ConnectionTable::SetReading(const std::shared_ptr<ConnectionSlot::State>& state,
                                 bool reading) {
  std::lock_guard lock(mu_);
  if (!state->alive || state->reading == reading) return;
  state->reading = reading;
  if (reading) {
    reading_.push_back(state);
    state->pos = std::prev(reading_.end());
  } else {
    reading_.erase(state->pos);
  }
}

}  // namespace infertel::http
