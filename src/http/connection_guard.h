#pragma once
// What keeps slow or idle senders from holding an HTTP/1 server (the OTLP/HTTP receiver, the
// admin address, the gateway, which has read timeouts of its own): a time limit on each phase of
// reading a request, and a cap on connections at which the connection that has been reading its
// request longest is closed to make room for a new one, so that idle and slow connections cannot
// lock normal requests out. Only when every connection is being answered is a new connection
// refused (503 and closed).
//
// Thread-safety: the table may be used from several threads; each connection's socket must be
// bound to a strand (or the io_context run by one thread), since an eviction closes it from
// a handler posted to the socket's executor.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string_view>

namespace infertel {
class StatsRegistry;
}

namespace infertel::http {

struct ConnectionLimits {
  std::size_t max_connections = 256;
  // A kept-alive connection may wait this long for the first byte of its next request.
  std::chrono::milliseconds idle_timeout{60'000};
  // From a request's first byte to the end of its header.
  std::chrono::milliseconds header_timeout{10'000};
  // From the end of the header to the end of the body (the whole body: a minimum rate of
  // the body limit over this time for the largest body).
  std::chrono::milliseconds body_timeout{30'000};
};

// Connections closed by the guard, by reason; one per server.
struct ConnectionStats {
  std::atomic<std::uint64_t> connection_limit{0};  // refused at accept: 503 and closed
  std::atomic<std::uint64_t> evicted{0};           // closed to make room for a new connection
  std::atomic<std::uint64_t> idle_timeout{0};
  std::atomic<std::uint64_t> header_timeout{0};
  std::atomic<std::uint64_t> body_timeout{0};
  std::atomic<std::uint64_t> open{0};  // connections open now
  // `family`{reason=…} counters and `open_family` gauge. `this` must outlive the registry's use.
  void Register(StatsRegistry* registry, std::string_view family,
                std::string_view open_family) const;
};

class ConnectionTable;

// One connection's place in the table, held by its session for its whole life.
class ConnectionSlot {
 public:
  ~ConnectionSlot();
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;

  // The connection starts reading a request (and may be evicted) / has read it (and may not).
  void Reading();
  void Answering();

  const ConnectionLimits& limits() const;
  ConnectionStats& stats() const;

 private:
  friend class ConnectionTable;
  struct State;
  explicit ConnectionSlot(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// Held by shared_ptr: slots, and evictions posted to their sockets' executors, keep it alive.
class ConnectionTable : public std::enable_shared_from_this<ConnectionTable> {
 public:
  // `stats` may be a non-owning pointer (an aliasing shared_ptr) to counters that outlive
  // every connection.
  static std::shared_ptr<ConnectionTable> Make(ConnectionLimits limits,
                                               std::shared_ptr<ConnectionStats> stats) {
    return std::shared_ptr<ConnectionTable>(new ConnectionTable(limits, std::move(stats)));
  }

  // A connection just accepted, whose stream lives as long as the returned slot. At the cap,
  // the connection reading its request longest is closed (counted `evicted`) to make room; if
  // every connection is answering a request, the new one is answered 503 and closed (counted
  // `connection_limit`) and nullptr is returned.
  std::unique_ptr<ConnectionSlot> Admit(boost::beast::tcp_stream& stream) {
    return Admit(stream.socket());
  }
  // The same for a TCP socket of any executor.
  template <typename Socket>
  std::unique_ptr<ConnectionSlot> Admit(Socket& socket) {
    return Admit(socket.get_executor(), socket.native_handle(), [&socket] {
      boost::system::error_code ec;
      socket.close(ec);
    });
  }
  // The same, where `close` closes the connection's socket `fd`: called on `executor` to evict
  // it (and it may decline, as the gateway does for a connection that finished reading its
  // request while the eviction was on its way), or at once when the connection is refused.
  std::unique_ptr<ConnectionSlot> Admit(boost::asio::any_io_executor executor, int fd,
                                        std::function<void()> close);

  const ConnectionLimits& limits() const { return limits_; }
  ConnectionStats& stats() const { return *stats_; }

 private:
  friend class ConnectionSlot;
  ConnectionTable(ConnectionLimits limits, std::shared_ptr<ConnectionStats> stats)
      : limits_(limits), stats_(std::move(stats)) {}
  using Reading = std::list<std::shared_ptr<ConnectionSlot::State>>;
  bool EvictOldestLocked();
  void Release(ConnectionSlot::State& state);
  void SetReading(const std::shared_ptr<ConnectionSlot::State>& state, bool reading);

  const ConnectionLimits limits_;
  const std::shared_ptr<ConnectionStats> stats_;
  std::mutex mu_;         // guards everything below and each State's fields
  std::size_t open_ = 0;  // slots given and not yet released
  Reading reading_;       // connections reading a request, the one that started first in front
};

}  // namespace infertel::http
