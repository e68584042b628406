#pragma once
// Coarse socket deadlines for one gateway worker.
//
// Why not beast::tcp_stream's own timeouts: they arm a timer on every read and write, so a
// proxied request re-arms the worker's timerfd several times and turns the event loop over
// for each completion. Here a deadline is a plain store into a slot; one periodic sweep per
// worker cancels the sockets whose deadline has passed. Timeouts fire up to one tick late,
// which is nothing against the seconds-long limits they enforce.
//
// Single-threaded: a Deadlines and its Deadline slots belong to one worker's io_context.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

namespace infertel::gateway {

class Deadlines;

// A gateway worker's socket: bound to its io_context's executor type rather than the
// type-erased any_io_executor, so that no operation on the data path goes through
// any_executor's indirections.
using WorkerSocket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

// A socket's deadline, registered with its worker's Deadlines for as long as it lives.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  Deadline(Deadlines* owner, WorkerSocket* socket);
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

  // The socket's operations started from now on must end within `d`.
  void After(Clock::duration d) {
    at_ = Clock::now() + d;
    fired_ = false;
  }
  // The socket's operations started from now on must end by `t`.
  void At(Clock::time_point t) {
    at_ = t;
    fired_ = false;
  }
  void Never() {
    at_ = Clock::time_point::max();
    fired_ = false;
  }
  // The deadline passed and the socket's operations were cancelled.
  bool fired() const { return fired_; }

 private:
  friend class Deadlines;
  Deadlines* owner_;
  WorkerSocket* socket_;
  Clock::time_point at_ = Clock::time_point::max();
  bool fired_ = false;
  std::size_t slot_ = 0;
};

// The registry of one worker's deadlines. It owns no timer: the worker calls Sweep() from a
// periodic timer of its own, so that the registry can outlive the io_context whose handlers
// (coroutine frames holding Deadline slots) are destroyed with it.
class Deadlines {
 public:
  // Cancels the operations of every socket whose deadline has passed; returns how many.
  std::size_t Sweep();
  std::size_t size() const { return slots_.size(); }

 private:
  friend class Deadline;
  void Add(Deadline* d);
  void Remove(Deadline* d);

  std::vector<Deadline*> slots_;
};

}  // namespace infertel::gateway
