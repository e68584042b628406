#include "gateway/gateway.h"

#include "engines/registry.h"

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <future>
#include <limits>
#include <thread>

#include "core/cpus.h"
#include "core/hex.h"
#include "core/semconv.h"
#include "core/thread_name.h"
#include "gateway/content_events.h"
#include "gateway/deadlines.h"
#include "gateway/sse_relay.h"
#include "http/body_room.h"
#include "http/flat_write.h"
#include "http/simple_server.h"

namespace infertel::gateway {

using openai::Exchange;
using openai::ExchangeListener;
using openai::Outcome;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
// Sockets, timers and coroutines all use the io_context's own executor type (see
// WorkerSocket in deadlines.h).
using Executor = asio::io_context::executor_type;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;
template <typename T>
using Task = asio::awaitable<T, Executor>;
constexpr asio::use_awaitable_t<Executor> kUseTask;

void GatewayStats::Register(StatsRegistry* r, const std::string& labels) const {
  using T = StatsRegistry::Type;
  r->Add("infertel_gateway_requests", "Requests received by the gateway", T::kCounter, labels,
         &requests);
  r->Add("infertel_gateway_observed_exchanges", "OpenAI-API exchanges observed", T::kCounter,
         labels, &observed);
  r->Add("infertel_gateway_unparsed_bodies", "Request bodies forwarded without detail (not JSON)",
         T::kCounter, labels, &unparsed_bodies);
  r->Add("infertel_gateway_upstream_errors", "Connect or I/O failures toward the engine",
         T::kCounter, labels, &upstream_errors);
  for (std::size_t i = 0; i < kUpstreamFailureCount; ++i) {
    const auto f = static_cast<UpstreamFailure>(i);
    r->Add("infertel_gateway_upstream_failures",
           "Requests failed on the engine's side (timeouts, refused or closed connections), by "
           "reason",
           T::kCounter,
           fmt::format("{}{}reason=\"{}\"", labels, labels.empty() ? "" : ",",
                       UpstreamFailureReason(f)),
           &upstream_failures.count(f));
  }
  for (std::size_t i = 0; i < kInvalidAnswerCount; ++i) {
    const auto a = static_cast<InvalidAnswer>(i);
    r->Add(
        "infertel_gateway_invalid_upstream_answers",
        "Engine answers passed to the client whose values the gateway did not take (usage "
        "counts that are not token counts, a 2xx body on a JSON endpoint that is not JSON), "
        "by reason",
        T::kCounter,
        fmt::format("{}{}reason=\"{}\"", labels, labels.empty() ? "" : ",", InvalidAnswerReason(a)),
        &invalid_answers.count(a));
  }
  r->Add("infertel_gateway_client_aborts", "Clients gone before the response was complete",
         T::kCounter, labels, &client_aborts);
  r->Add("infertel_gateway_rejected", "Requests refused by the gateway (too large, malformed)",
         T::kCounter, labels, &rejected);
  r->Add("infertel_gateway_upstream_connects", "New connections opened to the engine", T::kCounter,
         labels, &upstream_connects);
  r->Add("infertel_gateway_active_connections", "Client connections open now", T::kGauge, labels,
         &active_connections);
  r->Add("infertel_gateway_active_streams", "SSE responses in flight now", T::kGauge, labels,
         &active_streams);
  r->Add("infertel_gateway_drain_cut", "Requests still in flight when the drain timeout ran out",
         T::kCounter, labels, &drain_cut);
  framing.Register(r, "infertel_gateway_refused_requests",
                   "Requests refused for their framing (RFC 9112), by reason", labels);
  connections.Register(r, "infertel_gateway_refused_connections",
                       "infertel_gateway_open_connections");
}

namespace {

// Relay buffer and upstream read buffer size. Large enough for a typical non-stream answer
// (header and body) in one read, small enough that thousands of concurrent streams, each
// holding one of each, stay within tens of MiB.
constexpr std::size_t kReadChunk = 8 * 1024;
// Requests a worker lets go by before it looks for an engine's answer at once again, after a
// look that found nothing (Forward): at most one system call in this many more than before
// under light load.
constexpr std::uint32_t kSkipEarlyReads = 16;
// A response body up to this size with a known length is read whole and sent with its
// header in one write; larger or open-ended bodies are relayed as they arrive.
constexpr std::size_t kWholeBodyMax = 256 * 1024;
// A client connection's read buffer between requests: a typical request in one or two
// reads, 2 KiB per connection.
constexpr std::size_t kClientBufferRoom = 2048;
// Relay buffers kept per worker for reuse.
constexpr std::size_t kMaxIdleChunks = 256;
// How often a worker's deadlines are checked.
constexpr std::chrono::milliseconds kDeadlineTick{100};
constexpr std::chrono::seconds kClientWriteTimeout{60};
// A whole body's write shorter than this is the kernel's, not a wait on the client.
constexpr std::uint64_t kClientWaitFloorNs = 1'000'000;

// One relayed piece of a chunked response (RFC 9112 §7.1): its size line, the piece, and the
// CRLF after it, as three buffers. Beast's make_chunk allocated a shared buffer for the size
// line of every chunk: one allocation per relayed SSE event.
class ChunkFrame {
 public:
  std::array<asio::const_buffer, 3> Frame(std::string_view piece) {
    auto [end, ec] = std::to_chars(head_.data(), head_.data() + head_.size() - 2, piece.size(), 16);
    (void)ec;  // 16 hex digits always fit a size_t
    *end++ = '\r';
    *end++ = '\n';
    return {asio::const_buffer(head_.data(), static_cast<std::size_t>(end - head_.data())),
            asio::buffer(piece.data(), piece.size()), asio::const_buffer("\r\n", 2)};
  }

 private:
  std::array<char, 18> head_{};
};

// Writes what a client socket in user non-blocking mode takes of `buffers` now, and returns
// how many bytes that was. A relayed SSE event nearly always fits the socket's buffer: written
// at once, it costs no completion handler posted and resumed through the event loop, whose
// every turn polls epoll (docs/performance-history.md, "System calls per SSE event, counted
// again"), and being a plain call, no coroutine frame either. *ec is set on a failure other
// than a full socket.
template <typename Buffers>
std::size_t WriteNow(WorkerSocket& socket, const Buffers& buffers, error_code& ec) {
  const std::size_t n = socket.write_some(buffers, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};
  return n;
}

// The rest of `buffers` after the first `written` bytes, through an asynchronous write under
// the client's write deadline.
template <typename Buffers>
Task<void> WriteRest(WorkerSocket& socket, const Buffers& buffers, std::size_t written,
                     Deadline& deadline, error_code& ec) {
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(written);
  deadline.After(kClientWriteTimeout);
  co_await asio::async_write(socket, rest, asio::redirect_error(kUseTask, ec));
  deadline.Never();
}

// `Expect: 100-continue` on an HTTP/1.1 request (RFC 9110 §10.1.1).
bool ExpectsContinue(const bhttp::request<bhttp::string_body>& req) {
  return req.version() >= 11 && beast::iequals(req[bhttp::field::expect], "100-continue");
}

// Hop-by-hop headers (RFC 9110 §7.6.1) are the proxy's own business on each side, and so is
// `Expect`: the gateway answered the expectation itself and sends the engine the whole body.
bool IsHopByHop(bhttp::field f, std::string_view name) {
  return f == bhttp::field::expect || http::IsFixedHopByHop(f, name);
}

// "<trace id>-<16 random hex digits>", in one allocation.
std::string NewRequestId(const TraceId& trace_id) {
  const SpanId random = NewSpanId();
  std::string id;
  id.reserve(32 + 1 + 16);
  AppendHex(&id, AsBytes(trace_id));
  id += '-';
  AppendHex(&id, AsBytes(random));
  return id;
}

// One connection to an engine. Heap-held so that the stream and its deadline slot keep
// their addresses while the connection moves between an exchange and the idle pool.
struct UpstreamConn {
  UpstreamConn(asio::io_context& io, Deadlines* deadlines)
      : stream(io), deadline(deadlines, &stream) {
    // Room for a whole typical response in the first read (a fresh flat_buffer reads 512
    // bytes at a time).
    buffer.reserve(kReadChunk);
  }
  WorkerSocket stream;
  Deadline deadline;
  beast::flat_buffer buffer;
};

struct Pooled {
  std::unique_ptr<UpstreamConn> conn;
  bool reused = false;
};

// An operation cancelled by its socket's deadline reports a timeout.
void MapTimeout(error_code& ec, const Deadline& d) {
  if (ec == asio::error::operation_aborted && d.fired()) ec = beast::error::timeout;
}

// The engine's bytes broke HTTP/1.1 (a bad status line, header or chunk size), as opposed to
// the connection ending or timing out.
bool IsFramingError(const error_code& ec) {
  using E = bhttp::error;
  for (E e : {E::header_limit, E::bad_line_ending, E::bad_method, E::bad_target, E::bad_version,
              E::bad_status, E::bad_reason, E::bad_field, E::bad_value, E::bad_content_length,
              E::bad_transfer_encoding, E::bad_chunk, E::bad_chunk_extension, E::bad_obs_fold}) {
    if (ec == e) return true;
  }
  return false;
}

// Watches the client socket while the gateway waits on the engine and relays its answer, so
// that a client going away is noticed at once and the engine's request is closed (which
// makes the engine abort it). A peek, so a pipelined next request stays in the socket for
// the session; asio tries it at once (one recv that finds nothing, or the close that is
// already there) and then waits for the socket's next event without another system call.
// Armed only when there is something to wait for: not when the engine's whole answer is
// already in its socket once the request is sent (Forward, HandleOne); a client gone then
// fails the write of the answer instead. Lives in the exchange's frame; only an armed watch
// allocates (its PendingPeek), so an exchange that needs none makes no allocation for it.
struct PendingPeek;
struct ClientWatch {
  WorkerSocket* client = nullptr;
  bool stopped = false;      // the exchange is over
  bool client_gone = false;  // the client closed or reset its connection
  bool armed = false;
  WorkerSocket* upstream = nullptr;
  std::shared_ptr<PendingPeek> peek;  // while armed; shared with the peek's handler
};

// What the peek's handler holds, which may outlive the exchange: the byte it peeks into, and
// the watch, cleared when the exchange ends (a late completion then does nothing).
struct PendingPeek {
  ClientWatch* watch = nullptr;
  char byte = 0;
};

// The response header toward the client and how its body is framed.
struct ClientHead {
  bhttp::response<bhttp::empty_body> res;
  bool head_only = false;            // no body: HEAD, 1xx, 204, 304
  bool chunked_out = false;          // the body leaves chunked
  bool close_delimited_out = false;  // an HTTP/1.0 client: the body ends with the connection
  bool keep_client = false;          // the client connection may carry another request
};

// Stage 3, the engine's header made the client's: its fields but the hop-by-hop ones and the
// length, which stays only when the body leaves as it came (`reframe` false: a stream the
// gateway rewrites leaves chunked).
ClientHead MakeClientHead(const bhttp::response<bhttp::buffer_body>& ures,
                          boost::optional<std::uint64_t> content_length, bhttp::verb method,
                          unsigned client_version, bool reframe, bool client_keep_alive) {
  ClientHead h{bhttp::response<bhttp::empty_body>{ures.result(), client_version}};
  for (const auto& f : ures) {
    if (IsHopByHop(f.name(), f.name_string()) || f.name() == bhttp::field::content_length) continue;
    h.res.insert(f.name(), f.name_string(), f.value());
  }
  const int status = ures.result_int();
  h.head_only = method == bhttp::verb::head || status == 204 || status == 304 ||
                (status >= 100 && status < 200);
  if (!h.head_only) {
    if (!reframe && content_length) {
      h.res.content_length(*content_length);
    } else if (client_version >= 11) {
      h.res.chunked(true);
      h.chunked_out = true;
    } else {
      h.close_delimited_out = true;
    }
  } else if (content_length) {
    h.res.content_length(*content_length);
  }
  h.keep_client = client_keep_alive && !h.close_delimited_out;
  h.res.keep_alive(h.keep_client);
  return h;
}

// Reads what the engine has already sent on `up` into its buffer, without waiting (the socket
// is in user non-blocking mode, Acquire): true when anything came. Nothing yet, or an error,
// is left to the asynchronous read that follows, which sees the error again.
bool ReadArrived(UpstreamConn& up) {
  error_code ec;
  const std::size_t n =
      up.stream.read_some(up.buffer.prepare(beast::read_size(up.buffer, kReadChunk)), ec);
  if (ec || n == 0) return false;
  up.buffer.commit(n);
  return true;
}

void ArmWatch(ClientWatch& watch) {
  watch.armed = true;
  watch.peek = std::make_shared<PendingPeek>();
  watch.peek->watch = &watch;
  auto on_peek = [peek = watch.peek](const error_code& ec, std::size_t n) {
    // After the exchange the watch and the socket may be gone: an ended watch is never
    // touched.
    ClientWatch* w = peek->watch;
    if (w == nullptr) return;
    if (!ec && n > 0) return;  // a pipelined request: read after this one
    w->client_gone = true;
    if (w->upstream != nullptr) {
      error_code cec;
      w->upstream->cancel(cec);
    }
  };
  watch.client->async_receive(asio::buffer(&watch.peek->byte, 1), WorkerSocket::message_peek,
                              std::move(on_peek));
}

// A client connection, listed on its worker (an intrusive list: no allocation) so that a
// graceful stop can close the idle ones and, at the drain deadline, cut the busy ones.
struct SessionSlot {
  WorkerSocket* client = nullptr;
  bool busy = false;  // from a request's header read until its response is done
  SessionSlot* prev = nullptr;
  SessionSlot* next = nullptr;
};

}  // namespace

// What the forward stage leaves: the engine connection (empty when none could be made), the
// parser holding its response header, when the first-byte timeout ends, and the last error.
struct Forwarded {
  std::optional<Pooled> conn;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser;
  Deadline::Clock::time_point first_byte_at{};  // from the request's sending
  error_code ec;
  std::string head;  // the request's head while it is written (http/flat_write.h)
};
namespace {
// Why the forward stage got no response header.
UpstreamFailure ForwardFailure(const Forwarded& f) {
  const bool timed_out = f.ec == beast::error::timeout;
  if (!f.conn) return timed_out ? UpstreamFailure::kConnectTimeout : UpstreamFailure::kConnectError;
  return timed_out              ? UpstreamFailure::kFirstByteTimeout
         : IsFramingError(f.ec) ? UpstreamFailure::kMalformed
                                : UpstreamFailure::kClosed;
}
struct WatchGuard;   // below: HandleOne's watch of the client while the engine answers
struct Relay;        // below: what HandleOne's relay stage shares
class ClientWriter;  // below: body pieces to the client
}  // namespace

struct Gateway::Impl {
  struct UpstreamState {
    UpstreamConfig config;
    // Set once the engine has returned a cached-token count: it runs with cache reporting on
    // (vLLM --enable-prompt-tokens-details, SGLang --enable-cache-report), so a later
    // response without one means none were cached.
    std::shared_ptr<std::atomic<bool>> reports_cached = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<std::atomic<bool>> ready = std::make_shared<std::atomic<bool>>(true);
    tcp::resolver::results_type endpoints;
    std::unique_ptr<tcp::acceptor> acceptor;
    std::uint16_t port = 0;
  };
  struct Worker {
    // Declared before io: coroutine frames destroyed with io release their slots here.
    Deadlines deadlines;
    asio::io_context io{1};
    Timer sweep{io};
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
    std::thread thread;
    // Idle upstream connections, one list per upstream (index = upstream index).
    std::vector<std::vector<Pooled>> idle;
    // Relay buffers not in use (kReadChunk bytes each), so a relayed response does not
    // allocate one.
    std::vector<std::unique_ptr<char[]>> chunks;
    SessionSlot* sessions = nullptr;  // the worker's client connections
    // Requests to go before Forward looks for the engine's answer at once again
    // (ReadArrived): it found nothing last time, and each look that finds nothing is a system
    // call more than watching first.
    std::uint32_t skip_early_reads = 0;

    void Link(SessionSlot* s) {
      s->next = sessions;
      if (sessions != nullptr) sessions->prev = s;
      sessions = s;
    }
    void Unlink(SessionSlot* s) {
      if (s->prev != nullptr) s->prev->next = s->next;
      if (s->next != nullptr) s->next->prev = s->prev;
      if (sessions == s) sessions = s->next;
    }
    // Shuts down and cancels the connections that are busy (`busy`) or idle (`!busy`);
    // returns how many. On the worker's thread.
    std::size_t CloseSessions(bool busy) {
      std::size_t n = 0;
      for (SessionSlot* s = sessions; s != nullptr; s = s->next) {
        if (s->busy != busy) continue;
        error_code ec;
        s->client->shutdown(WorkerSocket::shutdown_both, ec);
        s->client->cancel(ec);
        ++n;
      }
      return n;
    }

    void ArmSweep() {
      sweep.expires_after(kDeadlineTick);
      sweep.async_wait([this](const error_code& ec) {
        if (ec) return;
        deadlines.Sweep();
        ArmSweep();
      });
    }
  };

  Gateway* gw;
  asio::io_context accept_io{1};
  std::thread accept_thread;
  std::vector<UpstreamState> upstreams;
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<ExchangeListener*> listeners;
  std::atomic<std::size_t> next_worker{0};
  std::atomic<bool> stopping{false};
  std::atomic<bool> draining{false};      // StopAccepting() was called
  std::atomic<bool> cutting{false};       // the drain deadline passed: what ends now was cut
  std::atomic<std::size_t> in_flight{0};  // busy sessions, every worker
  std::shared_ptr<http::ConnectionTable> connections;  // the cap, every listener together

  explicit Impl(Gateway* g) : gw(g) {}

  const GatewayOptions& opts() const { return gw->options_; }
  GatewayStats& stats() { return gw->stats_; }

  Task<void> AcceptLoop(std::size_t upstream_index);
  Task<void> Session(std::size_t ui, Worker* w, WorkerSocket client);
  // A new client connection in the connection cap: another one closed to make room, or this
  // one refused (503) and closed (null). `*answering` must outlive the slot.
  std::unique_ptr<http::ConnectionSlot> AdmitClient(WorkerSocket& client, const bool* answering);
  // Counts a client read past client_idle_timeout by what it was waiting for.
  void CountReadTimeout(const bhttp::request_parser<bhttp::string_body>& parser);
  // Returns true when the client connection may carry another request.
  Task<bool> HandleOne(std::size_t ui, Worker* w, WorkerSocket& client, Deadline& client_deadline,
                       bhttp::request<bhttp::string_body>& req);
  // The engine's response header as the client gets it: whether it is a stream, whether the
  // gateway rewrites it, the client's header; the client watched while more is to come.
  struct ResponseHead {
    ClientHead head;
    bool sse = false, modify = false;
  };
  ResponseHead TakeResponseHead(const bhttp::response_parser<bhttp::buffer_body>& rp,
                                const UpstreamConn& up, bhttp::verb method, unsigned client_version,
                                bool client_keep_alive, bool observe, Exchange& ex,
                                ClientWatch& watch);
  // HandleOne's stages (their definitions say what each does).
  Task<void> Forward(std::size_t ui, Worker* w, const UpstreamTimeouts& timeouts,
                     bhttp::request<bhttp::string_body>& ureq, bool head, Exchange& ex,
                     bool observe, WatchGuard& guard, Forwarded& out);
  // The request's tenant by the configured rule (analytics/tenant.h).
  std::string TenantOf(const std::shared_ptr<const config::Settings>& settings,
                       const bhttp::request<bhttp::string_body>& req, const Exchange& ex);
  bool PrepareExchange(std::size_t ui, const std::shared_ptr<const config::Settings>& settings_ptr,
                       bhttp::request<bhttp::string_body>& req, Exchange& ex,
                       bhttp::request<bhttp::string_body>& ureq,
                       openai::StreamObserver::Options& stream_opts);
  // HandleOne's relay stage: the engine's body to the client, read whole (RelayWhole) or
  // relayed in pieces as it comes (RelayPieces). kClientGone and kCleanFailure: nothing
  // reached the client yet, and HandleOne answers it.
  enum class RelayEnd { kRelayed, kClientGone, kCleanFailure };
  Task<RelayEnd> RelayBody(Relay& r, Worker* w);
  bool EndExchange(Relay& r, Worker* w, Pooled&& conn);
  Task<RelayEnd> RelayWhole(Relay& r);
  Task<RelayEnd> RelayPieces(Relay& r, Worker* w);
  bool StreamPiece(Relay& r, SseRelay& relay, const openai::StreamObserver& observer,
                   std::string_view bytes, std::string* scratch, ClientWriter& out);
  void WatchTokenDetail(Relay& r, SseRelay& relay, const openai::StreamObserver& observer);
  bool Hold(Relay& r, std::string_view bytes);
  Task<void> Spill(Relay& r, ClientWriter& out, std::string_view bytes);
  void ObserveBody(Relay& r, std::string_view bytes);
  Task<void> EndPieces(Relay& r, ClientWriter& out, SseRelay& relay, bool body_started);
  Task<void> AnswerHeld(Relay& r, ClientWriter& out);
  // HandleOne's last stage for an observed exchange: the response parsed if it was not yet,
  // usage completed, the outcome set, the exchange finished (listeners, metrics).
  // `can_parse`: the body was kept whole and may still be parsed; `failed`: the engine failed
  // (NoteUpstreamFailure set the outcome); `aborted`: the client went away.
  void SettleExchange(std::size_t ui, Exchange& ex, const std::string& observed_body,
                      const openai::CaptureOptions& capture, bool body_parsed, bool can_parse,
                      bool head_only, bool failed, bool aborted);
  Task<std::optional<Pooled>> Acquire(std::size_t ui, Worker* w, bool fresh,
                                      std::chrono::milliseconds connect_timeout, error_code& ec);
  // Counts and logs a failure on the engine's side and sets the exchange's outcome from it.
  FailureReport NoteUpstreamFailure(std::size_t ui, UpstreamFailure f,
                                    const UpstreamTimeouts& timeouts, std::string_view detail,
                                    Exchange& ex);
  // Counts and logs what the engine answered that reached the client but not the telemetry as
  // it came: usage counts that are not token counts (the parser left them out), and a 2xx body
  // on a JSON endpoint that is not JSON (`body_seen`: all of it was parsed), which makes the
  // exchange an engine error.
  void NoteInvalidAnswer(std::size_t ui, bool body_seen, Exchange& ex);
  void Release(std::size_t ui, Worker* w, Pooled&& c);
  void Finish(Exchange& ex);
  // Runs `fn(worker)` on every worker's thread and returns the sum of what it returned.
  std::size_t OnEveryWorker(const std::function<std::size_t(Worker&)>& fn);
  Task<void> RefuseFraming(WorkerSocket& client, Deadline& deadline, http::FramingError error);
  Task<void> WriteSimple(WorkerSocket& client, Deadline& deadline, unsigned version,
                         unsigned status, std::string body, bool keep_alive);
};

int GatewayWorkers(int threads, int allowed_cpus) {
  if (threads > 0) return threads;
  return std::clamp(allowed_cpus, 1, kMaxDefaultWorkers);
}

Gateway::Gateway(GatewayOptions options, std::shared_ptr<config::ConfigStore> config)
    : options_(std::move(options)),
      config_(std::move(config)),
      impl_(std::make_unique<Impl>(this)) {}

Gateway::~Gateway() { Stop(); }

void Gateway::AddListener(ExchangeListener* listener) { impl_->listeners.push_back(listener); }

void Gateway::SetUpstreamReady(std::size_t index, bool ready) {
  if (index < impl_->upstreams.size())
    impl_->upstreams[index].ready->store(ready, std::memory_order_release);
}

std::vector<std::uint16_t> Gateway::Ports() const {
  std::vector<std::uint16_t> out;
  for (const auto& u : impl_->upstreams) out.push_back(u.port);
  return out;
}

bool Gateway::Start(std::string* error) {
  Impl& im = *impl_;
  for (const UpstreamConfig& uc : options_.upstreams) {
    Impl::UpstreamState st;
    st.config = uc;
    st.ready->store(uc.start_ready);
    if (uc.url.scheme != "http") {
      *error = fmt::format("upstream {}: only http:// engines are supported", uc.url.ToString());
      return false;
    }
    error_code ec;
    tcp::resolver resolver(im.accept_io);
    st.endpoints = resolver.resolve(uc.url.host, std::to_string(uc.url.port), ec);
    if (ec) {
      *error =
          fmt::format("upstream {}: cannot resolve {}: {}", uc.name, uc.url.host, ec.message());
      return false;
    }
    auto addr =
        asio::ip::make_address(uc.listen.host == "localhost" ? "127.0.0.1" : uc.listen.host, ec);
    if (ec) {
      *error = fmt::format("bad listen host '{}'", uc.listen.host);
      return false;
    }
    tcp::endpoint ep(addr, uc.listen.port);
    // The gateway must never listen where its engine is: it would forward every request to
    // itself, without end. An OS-chosen port can be the engine's while the engine is not up
    // yet (launch mode, tests): choose again.
    auto is_engine = [&](const tcp::endpoint& local) {
      for (const auto& e : st.endpoints)
        if (e.endpoint().port() == local.port() &&
            (e.endpoint().address() == local.address() || local.address().is_unspecified()))
          return true;
      return false;
    };
    for (int attempt = 0;; ++attempt) {
      st.acceptor = std::make_unique<tcp::acceptor>(im.accept_io);
      st.acceptor->open(ep.protocol(), ec);
      if (!ec) st.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
      if (!ec) st.acceptor->bind(ep, ec);
      if (!ec) st.acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        *error =
            fmt::format("cannot listen on {}:{}: {}", uc.listen.host, uc.listen.port, ec.message());
        return false;
      }
      if (!is_engine(st.acceptor->local_endpoint())) break;
      if (uc.listen.port != 0 || attempt >= 8) {
        *error = fmt::format("upstream {}: the gateway would listen on the engine's own address {}",
                             uc.name, uc.url.HostPort());
        return false;
      }
    }
    st.port = st.acceptor->local_endpoint().port();
    im.upstreams.push_back(std::move(st));
  }
  // The stats outlive the table's use: Stop() joins the workers, whose sessions hold slots.
  im.connections = http::ConnectionTable::Make(
      http::ConnectionLimits{.max_connections = std::max<std::size_t>(1, options_.max_connections)},
      std::shared_ptr<http::ConnectionStats>(std::shared_ptr<void>(), &stats_.connections));
  const int n = GatewayWorkers(options_.threads, CpuBudget());
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<Impl::Worker>();
    w->guard.emplace(w->io.get_executor());
    w->idle.resize(im.upstreams.size());
    im.workers.push_back(std::move(w));
  }
  for (std::size_t i = 0; i < im.workers.size(); ++i) {
    auto& w = im.workers[i];
    w->ArmSweep();
    w->thread = std::thread([io = &w->io, i] {
      NameThisThread("gateway-io-" + std::to_string(i));
      AskForShortSlices();  // preempt background threads on wake-up (core/thread_name.h)
      io->run();
    });
  }
  for (std::size_t i = 0; i < im.upstreams.size(); ++i)
    asio::co_spawn(im.accept_io, im.AcceptLoop(i), asio::detached);
  im.accept_thread = std::thread([&im] {
    NameThisThread("gateway-accept");
    AskForShortSlices();
    im.accept_io.run();
  });
  return true;
}

std::size_t Gateway::Impl::OnEveryWorker(const std::function<std::size_t(Worker&)>& fn) {
  std::vector<std::future<std::size_t>> results;
  for (auto& w : workers) {
    auto task =
        std::make_shared<std::packaged_task<std::size_t()>>([&fn, w = w.get()] { return fn(*w); });
    results.push_back(task->get_future());
    asio::post(w->io, [task] { (*task)(); });
  }
  std::size_t sum = 0;
  for (auto& r : results) sum += r.get();
  return sum;
}

void Gateway::StopAccepting() {
  Impl& im = *impl_;
  if (im.workers.empty() || im.stopping.load() || im.draining.exchange(true)) return;
  std::promise<void> closed;
  asio::post(im.accept_io, [&im, &closed] {
    for (auto& u : im.upstreams) {
      error_code ec;
      if (u.acceptor) u.acceptor->close(ec);
    }
    closed.set_value();
  });
  closed.get_future().wait();
  // A connection between two requests ends now; one that is busy ends after its response
  // (Session sees `draining`).
  im.OnEveryWorker([](Impl::Worker& w) { return w.CloseSessions(false); });
}

std::size_t Gateway::Drain(std::chrono::steady_clock::time_point deadline) {
  Impl& im = *impl_;
  StopAccepting();
  if (im.workers.empty() || im.stopping.load()) return 0;
  constexpr auto kPoll = std::chrono::milliseconds(10);
  while (im.in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(kPoll);
  if (im.in_flight.load() == 0) return 0;
  im.cutting = true;
  const std::size_t cut = im.OnEveryWorker([](Impl::Worker& w) { return w.CloseSessions(true); });
  stats_.drain_cut.fetch_add(cut, std::memory_order_relaxed);
  // The cut exchanges end (and reach the listeners) within a turn or two of their loops.
  const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (im.in_flight.load() > 0 && std::chrono::steady_clock::now() < grace)
    std::this_thread::sleep_for(kPoll);
  return cut;
}

void Gateway::Stop() {
  Impl& im = *impl_;
  if (im.stopping.exchange(true)) return;
  asio::post(im.accept_io, [&im] {
    for (auto& u : im.upstreams) {
      error_code ec;
      if (u.acceptor) u.acceptor->close(ec);
    }
  });
  im.accept_io.stop();
  if (im.accept_thread.joinable()) im.accept_thread.join();
  for (auto& w : im.workers) {
    w->guard.reset();
    w->io.stop();
  }
  for (auto& w : im.workers)
    if (w->thread.joinable()) w->thread.join();
}

Task<void> Gateway::Impl::AcceptLoop(std::size_t ui) {
  auto& acceptor = *upstreams[ui].acceptor;
  for (;;) {
    Worker* w = workers[next_worker.fetch_add(1, std::memory_order_relaxed) % workers.size()].get();
    error_code ec;
    WorkerSocket socket(w->io);
    co_await acceptor.async_accept(socket, asio::redirect_error(kUseTask, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of file descriptors and the like: back off briefly instead of spinning.
      Timer t(accept_io, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::redirect_error(kUseTask, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(w->io, Session(ui, w, std::move(socket)), asio::detached);
  }
}

Task<void> Gateway::Impl::Session(std::size_t ui, Worker* w, WorkerSocket client) {
  bool answering = false;  // the request read, being answered: never evicted
  const std::unique_ptr<http::ConnectionSlot> guard = AdmitClient(client, &answering);
  if (!guard) co_return;
  stats().active_connections.fetch_add(1, std::memory_order_relaxed);
  Deadline deadline(&w->deadlines, &client);
  SessionSlot slot{&client};
  w->Link(&slot);
  auto set_busy = [&](bool busy) {
    if (slot.busy == busy) return;
    slot.busy = busy;
    if (busy)
      in_flight.fetch_add(1, std::memory_order_relaxed);
    else
      in_flight.fetch_sub(1, std::memory_order_relaxed);
  };
  beast::flat_buffer buffer;
  buffer.reserve(kClientBufferRoom);
  for (;;) {
    set_busy(false);
    answering = false;
    guard->Reading();
    if (draining.load(std::memory_order_relaxed)) break;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(opts().max_request_body);
    parser.header_limit(64 * 1024);
    deadline.After(opts().client_idle_timeout);
    error_code ec;
    // Header first: a body larger than what the first read brought (a long prompt) is read
    // with room made for it, in 64 KiB reads rather than 2 KiB ones (http/body_room.h).
    co_await bhttp::async_read_header(client, buffer, parser, asio::redirect_error(kUseTask, ec));
    if (!ec) set_busy(true);
    // Framing the parser accepted but RFC 9112 refuses (a smuggled request behind a
    // Transfer-Encoding that is not chunked…): answered and closed, the body unread.
    const http::FramingError framing =
        ec ? http::FramingErrorFromParse(ec) : http::CheckRequestFraming(parser.get());
    if (framing != http::FramingError::kNone) {
      co_await RefuseFraming(client, deadline, framing);
      break;
    }
    if (!ec && !parser.is_done()) {
      // A client that asked to wait (curl does for bodies over 1 MiB) would otherwise wait
      // about a second before sending. The gateway has the whole body before the engine sees
      // the request, so it answers for the engine and does not pass the expectation on.
      if (ExpectsContinue(parser.get())) {
        static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        co_await asio::async_write(client, asio::buffer(kContinue.data(), kContinue.size()),
                                   asio::redirect_error(kUseTask, ec));
      }
      if (!ec) {
        http::MakeRoomForBody(buffer, parser);
        co_await bhttp::async_read(client, buffer, parser, asio::redirect_error(kUseTask, ec));
        http::ReleaseBodyRoom(buffer, kClientBufferRoom);
      }
    }
    MapTimeout(ec, deadline);
    if (ec == beast::error::timeout) CountReadTimeout(parser);
    if (ec == bhttp::error::body_limit) {
      stats().requests.fetch_add(1, std::memory_order_relaxed);
      stats().rejected.fetch_add(1, std::memory_order_relaxed);
      co_await WriteSimple(client, deadline, parser.get().version(), 413,
                           http::JsonErrorBody(413, "RequestEntityTooLarge",
                                               fmt::format("request body exceeds {} bytes",
                                                           opts().max_request_body)),
                           false);
      break;
    }
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == beast::error::timeout || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted) {
      break;
    }
    if (ec) {
      stats().rejected.fetch_add(1, std::memory_order_relaxed);
      co_await WriteSimple(
          client, deadline, 11, 400,
          http::JsonErrorBody(400, "BadRequest",
                              fmt::format("malformed HTTP request: {}", ec.message())),
          false);
      break;
    }
    deadline.Never();
    guard->Answering();
    answering = true;
    stats().requests.fetch_add(1, std::memory_order_relaxed);
    bool again = co_await HandleOne(ui, w, client, deadline, parser.get());
    if (!again || stopping.load(std::memory_order_relaxed)) break;
  }
  error_code ec;
  client.shutdown(WorkerSocket::shutdown_both, ec);
  client.close(ec);
  w->Unlink(&slot);
  set_busy(false);
  stats().active_connections.fetch_sub(1, std::memory_order_relaxed);
}

std::unique_ptr<http::ConnectionSlot> Gateway::Impl::AdmitClient(WorkerSocket& client,
                                                                 const bool* answering) {
  // Evictions run on the connection's worker, as its session does. One decided just as the
  // connection finished reading its request (it was the longest reading) arrives too late and
  // is declined: the request is answered, the connection no longer counted in the cap.
  return connections->Admit(client.get_executor(), client.native_handle(), [&client, answering] {
    if (*answering) return;
    error_code ec;
    client.close(ec);
  });
}

void Gateway::Impl::CountReadTimeout(const bhttp::request_parser<bhttp::string_body>& parser) {
  http::ConnectionStats& c = stats().connections;
  auto& counter = !parser.got_some()         ? c.idle_timeout
                  : !parser.is_header_done() ? c.header_timeout
                                             : c.body_timeout;
  counter.fetch_add(1, std::memory_order_relaxed);
}

Task<void> Gateway::Impl::RefuseFraming(WorkerSocket& client, Deadline& deadline,
                                        http::FramingError error) {
  stats().requests.fetch_add(1, std::memory_order_relaxed);
  stats().rejected.fetch_add(1, std::memory_order_relaxed);
  stats().framing.Count(error);
  co_await WriteSimple(
      client, deadline, 11, http::FramingStatus(error),
      http::JsonErrorBody(http::FramingStatus(error), "BadRequest", http::FramingMessage(error)),
      false);
  // Closing with unread bytes (the body, a smuggled request) would reset the connection and
  // could destroy the answer before the client reads it: half-close, then read and drop what
  // still comes, for a bounded time and size.
  error_code ec;
  client.shutdown(WorkerSocket::shutdown_send, ec);
  deadline.After(std::chrono::seconds(2));
  std::array<char, 4096> scratch;
  for (std::size_t dropped = 0; !ec && dropped < (1u << 20);)
    dropped +=
        co_await client.async_read_some(asio::buffer(scratch), asio::redirect_error(kUseTask, ec));
  deadline.Never();
}

Task<void> Gateway::Impl::WriteSimple(WorkerSocket& client, Deadline& deadline, unsigned version,
                                      unsigned status, std::string body, bool keep_alive) {
  auto res =
      http::MakeResponse(status, std::move(body), "application/json", version ? version : 11);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  deadline.After(std::chrono::seconds(30));
  error_code ec;
  co_await bhttp::async_write(client, res, asio::redirect_error(kUseTask, ec));
  deadline.Never();
}

Task<std::optional<Pooled>> Gateway::Impl::Acquire(std::size_t ui, Worker* w, bool fresh,
                                                   std::chrono::milliseconds connect_timeout,
                                                   error_code& ec) {
  auto& idle = w->idle[ui];
  if (!fresh) {
    while (!idle.empty()) {
      Pooled c = std::move(idle.back());
      idle.pop_back();
      if (c.conn->stream.is_open()) {
        c.reused = true;
        co_return std::optional<Pooled>(std::move(c));
      }
    }
  }
  Pooled c;
  c.conn = std::make_unique<UpstreamConn>(w->io, &w->deadlines);
  c.conn->deadline.After(connect_timeout);
  co_await asio::async_connect(c.conn->stream, upstreams[ui].endpoints,
                               asio::redirect_error(kUseTask, ec));
  MapTimeout(ec, c.conn->deadline);
  if (ec) co_return std::nullopt;
  c.conn->stream.set_option(tcp::no_delay(true), ec);
  // User non-blocking mode, for ReadArrived's plain read; every other read and write on it is
  // asynchronous.
  c.conn->stream.non_blocking(true, ec);
  ec = {};
  stats().upstream_connects.fetch_add(1, std::memory_order_relaxed);
  co_return std::optional<Pooled>(std::move(c));
}

void Gateway::Impl::Release(std::size_t ui, Worker* w, Pooled&& c) {
  auto& idle = w->idle[ui];
  if (idle.size() >= opts().max_idle_upstream_connections || stopping.load()) return;
  c.conn->deadline.Never();
  c.conn->buffer.clear();
  idle.push_back(std::move(c));
}

FailureReport Gateway::Impl::NoteUpstreamFailure(std::size_t ui, UpstreamFailure f,
                                                 const UpstreamTimeouts& timeouts,
                                                 std::string_view detail, Exchange& ex) {
  const UpstreamConfig& uc = upstreams[ui].config;
  FailureReport r = DescribeFailure(f, timeouts, uc.url.HostPort(), detail);
  stats().upstream_errors.fetch_add(1, std::memory_order_relaxed);
  stats().upstream_failures.Record(f, uc.name, r);
  ex.outcome =
      IsTimeout(f) ? openai::Outcome::kUpstreamTimeout : openai::Outcome::kUpstreamUnavailable;
  ex.error_type = std::string(r.error_type);
  ex.error_message = r.message;
  return r;
}

void Gateway::Impl::NoteInvalidAnswer(std::size_t ui, bool body_seen, Exchange& ex) {
  const std::string& upstream = upstreams[ui].config.name;
  if (!ex.response.usage.invalid.empty()) {
    stats().invalid_answers.Record(
        InvalidAnswer::kUsage, upstream,
        fmt::format("usage that is not token counts, left out: {}", ex.response.usage.invalid));
  }
  const bool success = ex.http_status >= 200 && ex.http_status < 300 && ex.http_status != 204;
  if (ex.outcome != openai::Outcome::kOk || ex.streamed || !body_seen || !success ||
      ex.response.parsed)
    return;
  ex.outcome = openai::Outcome::kEngineError;
  ex.error_type = std::string(semconv::kErrorUpstreamInvalidJson);
  ex.error_message = fmt::format("engine answered {} with a body that is not JSON: {}",
                                 ex.http_status, ex.response.parse_error);
  stats().invalid_answers.Record(InvalidAnswer::kNotJson, upstream, ex.error_message);
}

void Gateway::Impl::Finish(Exchange& ex) {
  // After the drain deadline every exchange still in flight was cut, whatever error its
  // cut surfaced as.
  if (cutting.load(std::memory_order_relaxed) && ex.outcome != openai::Outcome::kOk &&
      ex.outcome != openai::Outcome::kEngineError) {
    ex.outcome = openai::Outcome::kShutdown;
    ex.error_type = std::string(semconv::kErrorShutdown);
    ex.error_message = "cut: still in flight when the agent's drain timeout ran out";
  }
  if (ex.op != openai::Operation::kNone) ex.slo = gw->analytics_.Judge(gw->config_->Current(), ex);
  for (openai::ExchangeListener* l : listeners) l->OnExchangeFinished(ex);
}

namespace {

// Ends the watch when the exchange's frame goes, on every path out of it. A wait still
// pending completes with the socket's next event (or its close) and does nothing.
struct WatchGuard {
  ~WatchGuard() { End(); }
  // Ends the watch and withdraws its pending peek, so the peek does not run (a recv) when
  // the client's next request arrives. Only while the client socket is open.
  void Stop() {
    if (watch.stopped) return;
    End();
    if (watch.armed) {
      error_code ec;
      watch.client->cancel(ec);
    }
  }
  void End() {
    watch.stopped = true;
    watch.upstream = nullptr;
    if (watch.peek) watch.peek->watch = nullptr;
  }
  ClientWatch watch;
};

// A relay buffer from the worker's free list, returned to it when done.
class ChunkLease {
 public:
  explicit ChunkLease(std::vector<std::unique_ptr<char[]>>* free) : free_(free) {
    if (free_->empty()) {
      chunk_ = std::make_unique<char[]>(kReadChunk);
    } else {
      chunk_ = std::move(free_->back());
      free_->pop_back();
    }
  }
  ~ChunkLease() {
    if (free_->size() < kMaxIdleChunks) free_->push_back(std::move(chunk_));
  }
  ChunkLease(const ChunkLease&) = delete;
  ChunkLease& operator=(const ChunkLease&) = delete;
  char* data() { return chunk_.get(); }

 private:
  std::vector<std::unique_ptr<char[]>>* free_;
  std::unique_ptr<char[]> chunk_;
};

// What HandleOne's relay stage shares: the response on its way to the client, and what became
// of it, from which HandleOne settles the exchange.
struct Relay {
  std::size_t ui;
  WorkerSocket& client;
  Deadline& cdl;
  UpstreamConn& up;
  bhttp::response_parser<bhttp::buffer_body>& rp;
  ClientHead& head;
  Exchange& ex;
  const UpstreamTimeouts& timeouts;
  const openai::StreamObserver::Options& stream_opts;
  const ClientWatch& watch;
  Deadline::Clock::time_point first_byte_at;  // a stream's header came before the queue
  bool observe = false;
  bool sse = false;
  bool modify = false;  // a stream the gateway observes and rewrites (SseRelay)
  // Held whole before the client sees any of it (see HandleOne).
  bool hold_body = false;
  // What became of it.
  std::string observed_body;
  bool observed_overflow = false;
  bool client_write_failed = false;
  // A stream's [DONE] went whole into the client's socket: the stream is complete for the
  // client, whatever happens to the chunked body's last chunk after it.
  bool done_delivered = false;
  bool body_parsed = false;
  error_code uec;                          // the engine connection's last error
  std::optional<UpstreamFailure> failure;  // the engine failed after its header
};

// Writes body pieces to the client in two steps: Now (a plain call) writes what the socket
// takes and says whether anything is left; only then is Rest awaited. As one coroutine,
// every piece made a coroutine frame or two, and Asio recycles only one per thread. The
// client's socket is in user non-blocking mode; the gateway makes no other synchronous call
// on it.
class ClientWriter {
 public:
  explicit ClientWriter(Relay& r) : r_(r) {
    if (error_code ec; !r_.client.non_blocking()) r_.client.non_blocking(true, ec);
  }
  bool Now(std::string_view bytes) {
    if (bytes.empty() || r_.client_write_failed) return true;
    error_code ec;
    std::size_t total = bytes.size(), n = 0;
    if (r_.head.chunked_out) {
      const auto framed = frame_.Frame(bytes);
      total = asio::buffer_size(framed);
      n = WriteNow(r_.client, framed, ec);
    } else {
      n = WriteNow(r_.client, asio::buffer(bytes.data(), bytes.size()), ec);
    }
    if (ec) r_.client_write_failed = true;
    if (ec || n == total) return true;
    pending_ = bytes;
    pending_written_ = n;
    return false;
  }
  // Awaited only when the client's socket took less than the whole piece: the time until it
  // took the rest is the client's (Exchange::client_wait_ns).
  Task<void> Rest() {
    error_code ec;
    const std::uint64_t since = MonoNanos();
    if (r_.head.chunked_out) {
      co_await WriteRest(r_.client, frame_.Frame(pending_), pending_written_, r_.cdl, ec);
    } else {
      co_await WriteRest(r_.client, asio::buffer(pending_.data(), pending_.size()),
                         pending_written_, r_.cdl, ec);
    }
    r_.ex.client_wait_ns += MonoNanos() - since;
    if (ec) r_.client_write_failed = true;
  }
  Task<void> Header() {
    bhttp::response_serializer<bhttp::empty_body> sr{r_.head.res};
    r_.cdl.After(kClientWriteTimeout);
    error_code ec;
    co_await bhttp::async_write_header(r_.client, sr, asio::redirect_error(kUseTask, ec));
    r_.cdl.Never();
    if (ec) r_.client_write_failed = true;
  }
  Task<void> LastChunk() {
    error_code ec;
    r_.cdl.After(kClientWriteTimeout);
    co_await asio::async_write(r_.client, bhttp::make_chunk_last(),
                               asio::redirect_error(kUseTask, ec));
    r_.cdl.Never();
    if (ec) r_.client_write_failed = true;
  }

 private:
  Relay& r_;
  ChunkFrame frame_;
  std::string_view pending_;         // the piece Now left unfinished
  std::size_t pending_written_ = 0;  // how much of it (framing included) left already
};

}  // namespace

// Stage 1, read and parse: starts the exchange record and makes the request toward the engine:
// its fields but the hop-by-hop ones, the trace context continued or started, X-Request-Id,
// and the body rewritten for what observing the exchange needs (stream usage, logprobs).
// Listeners hear OnExchangeStarted. Returns whether the exchange is observed (an OpenAI
// operation of an instrumented engine).
std::string Gateway::Impl::TenantOf(const std::shared_ptr<const config::Settings>& settings,
                                    const bhttp::request<bhttp::string_body>& req,
                                    const Exchange& ex) {
  analytics::TenantInputs in;
  in.header = [&req](std::string_view name) -> std::optional<std::string_view> {
    auto it = req.find(name);
    if (it == req.end()) return std::nullopt;
    return it->value();
  };
  if (ex.request.user) in.user = *ex.request.user;
  if (auto it = req.find(bhttp::field::authorization); it != req.end())
    in.authorization = it->value();
  return gw->analytics_.TenantOf(settings, in);
}

bool Gateway::Impl::PrepareExchange(std::size_t ui,
                                    const std::shared_ptr<const config::Settings>& settings_ptr,
                                    bhttp::request<bhttp::string_body>& req, Exchange& ex,
                                    bhttp::request<bhttp::string_body>& ureq,
                                    openai::StreamObserver::Options& stream_opts) {
  const config::Settings& settings = *settings_ptr;
  const UpstreamConfig& uc = upstreams[ui].config;
  namespace oa = openai;
  const engines::EngineProfile& engine = engines::Profile(uc.engine);
  const engines::EngineSwitches switches = engine.switches();
  bool instrumented = engines::SwitchOn(settings, switches.enabled);
  oa::Operation op =
      instrumented ? oa::OperationForPath(req.method_string(), req.target()) : oa::Operation::kNone;
  const bool observe = op != oa::Operation::kNone;

  ex.start = Stopwatch::Start();
  ex.upstream_name = uc.name;
  ex.engine = uc.engine;
  ex.op = op;
  ex.pd_role = uc.pd_role;
  ex.tracing_level =
      static_cast<int>(engines::SwitchValue(settings, switches.tracing_level, /*otherwise=*/1));
  if (auto rank = req.find("x-data-parallel-rank"); rank != req.end()) {
    std::int64_t v = 0;
    auto sv = rank->value();
    auto [p, perr] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
    if (perr == std::errc() && p == sv.data() + sv.size()) ex.engine_index = v;
  } else if (uc.data_parallel_size == 1) {
    ex.engine_index = 0;
  }

  // Also the fields the client's Connection header names (RFC 9110 §7.6.1).
  const http::HopByHop named_hop_by_hop(req);
  for (const auto& f : req) {
    if (IsHopByHop(f.name(), f.name_string()) || named_hop_by_hop(f.name(), f.name_string()))
      continue;
    if (f.name() == bhttp::field::content_length) continue;
    if (observe && (beast::iequals(f.name_string(), "traceparent"))) continue;
    ureq.insert(f.name(), f.name_string(), f.value());
  }
  // Clients may ask for Connection: close; the upstream connection stays ours to keep.
  ureq.keep_alive(true);

  if (observe) {
    stats().observed.fetch_add(1, std::memory_order_relaxed);
    oa::CaptureOptions capture;
    capture.capture_content = settings.GetBool(config::Key::kCaptureMessageContent);
    capture.max_length =
        static_cast<std::size_t>(settings.GetInt(config::Key::kMessageContentMaxLength));
    capture.capture_multimodal = settings.GetBool(config::Key::kCaptureMultimodal);
    ex.capture_content = capture.capture_content;
    ex.genai_dialect = config::GenAiDialectIn(settings);
    const ContentStrategy strategy =
        ParseContentStrategy(settings.GetString(config::Key::kMessageContentCaptureStrategy));
    ex.content_on_span = strategy != ContentStrategy::kEvent;
    ex.content_on_event = strategy != ContentStrategy::kSpan;
    ex.log_requests = engines::SwitchOn(settings, switches.log_requests, false);
    ex.log_trace_context = engines::SwitchOn(settings, switches.log_trace_context, false);
    stream_opts.capture = capture;
    ex.request = oa::ParseRequest(op, req.body(), capture);
    if (!ex.request.parsed) stats().unparsed_bodies.fetch_add(1, std::memory_order_relaxed);

    // Trace context: continue the client's trace, else start one.
    ex.span_id = NewSpanId();
    auto tp_it = req.find("traceparent");
    std::optional<TraceParent> parent;
    if (tp_it != req.end()) parent = TraceParent::Parse(tp_it->value());
    if (parent) {
      ex.trace_id = parent->trace_id;
      ex.parent_span_id = parent->span_id;
      if (auto ts = req.find("tracestate"); ts != req.end())
        ex.trace_state = std::string(ts->value());
    } else {
      ex.trace_id = NewTraceId();
    }
    TraceParent ours{ex.trace_id, ex.span_id, parent ? parent->flags : std::uint8_t{1}};
    ureq.set("traceparent", ours.Format());
    if (!parent) ureq.erase("tracestate");

    // The engine names its request after X-Request-Id; one that carries the trace id lets the
    // engine's own logs and spans be joined to this trace.
    if (auto rid = req.find("x-request-id"); rid != req.end()) {
      ex.request_id = std::string(rid->value());
    } else {
      ex.request_id = NewRequestId(ex.trace_id);
      ureq.set("X-Request-Id", ex.request_id);
    }

    oa::RewriteOptions rw;
    if (ex.request.parsed && ex.request.stream && !ex.request.include_usage &&
        (op == oa::Operation::kChat || op == oa::Operation::kTextCompletion)) {
      rw.force_include_usage = true;
      stream_opts.drop_injected_usage = true;
    }
    // Token detail (the DECODE events of some engines' level 2) needs logprobs; they are
    // removed again for a client that did not ask for them.
    if (ex.request.parsed && engine.TokenDetailAt(ex.tracing_level) && !ex.request.logprobs &&
        (op == oa::Operation::kChat || op == oa::Operation::kTextCompletion)) {
      rw.force_logprobs = true;
    }
    if (auto body = oa::RewriteRequest(ex.request, req.body(), rw)) {
      ureq.body() = std::move(*body);
      ex.logprobs_forced = rw.force_logprobs;
      stream_opts.strip_injected_logprobs = rw.force_logprobs;
    } else {
      ureq.body() = std::move(req.body());
      stream_opts.drop_injected_usage = false;
    }
    if (gw->analytics_.HasTenantRule(settings_ptr)) ex.tenant = TenantOf(settings_ptr, req, ex);
    for (openai::ExchangeListener* l : listeners) l->OnExchangeStarted(ex);
  } else {
    ureq.body() = std::move(req.body());
  }
  if (req.has_content_length() || !ureq.body().empty() || req.chunked()) ureq.prepare_payload();

  return observe;
}

void Gateway::Impl::SettleExchange(std::size_t ui, Exchange& ex, const std::string& observed_body,
                                   const openai::CaptureOptions& capture, bool body_parsed,
                                   bool can_parse, bool head_only, bool failed, bool aborted) {
  if (!body_parsed && can_parse) {
    ex.response = openai::ParseResponse(ex.op, observed_body, capture);
    body_parsed = true;
  }
  auto& usage = ex.response.usage;
  if (usage.cached_tokens && *usage.cached_tokens > 0) {
    upstreams[ui].reports_cached->store(true, std::memory_order_relaxed);
  } else if (!usage.cached_tokens && usage.input_tokens &&
             upstreams[ui].reports_cached->load(std::memory_order_relaxed)) {
    usage.cached_tokens = 0;
  }
  if (failed) {
    // Outcome set by NoteUpstreamFailure.
  } else if (aborted) {
    ex.outcome = openai::Outcome::kClientAborted;
    ex.error_type = "client_disconnected";
    ex.error_message = "client closed the connection before the response was complete";
  } else if (ex.http_status >= 400) {
    ex.outcome = openai::Outcome::kEngineError;
    ex.error_type = ex.response.error_type.value_or(std::to_string(ex.http_status));
    ex.error_message =
        ex.response.error_message.value_or(fmt::format("engine answered {}", ex.http_status));
  } else if (ex.response.error_type) {
    // A stream that carried an error event after a 200 header.
    ex.outcome = openai::Outcome::kEngineError;
    ex.error_type = *ex.response.error_type;
    ex.error_message = ex.response.error_message.value_or("engine reported an error in the stream");
  } else if (ex.streamed && ex.response.unfinished_choices > 0) {
    // Cut short: the output messages say "error" for the choice; so does the span.
    ex.outcome = openai::Outcome::kEngineError;
    ex.error_type = std::string(semconv::kErrorStreamUnfinished);
    ex.error_message = fmt::format("the stream ended without a finish_reason for {} choice(s)",
                                   ex.response.unfinished_choices);
    stats().invalid_answers.Record(InvalidAnswer::kUnfinishedStream, upstreams[ui].config.name,
                                   ex.error_message);
  }
  NoteInvalidAnswer(ui, body_parsed && !head_only, ex);
  Finish(ex);
}

// Stage 2, forward: sends the request and reads the engine's response header. A pooled
// connection the engine closed while idle is retried once on a fresh one. The client's
// connection is watched from the first send on, so that a client gone while the engine works
// ends the exchange.
Task<void> Gateway::Impl::Forward(std::size_t ui, Worker* w, const UpstreamTimeouts& timeouts,
                                  bhttp::request<bhttp::string_body>& ureq, bool head, Exchange& ex,
                                  bool observe, WatchGuard& guard, Forwarded& out) {
  ClientWatch& watch = guard.watch;
  std::optional<Pooled>& conn = out.conn;
  std::optional<bhttp::response_parser<bhttp::buffer_body>>& parser = out.parser;
  error_code& ec = out.ec;
  bool watching = false;
  bool dispatched = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ec = {};
    parser.emplace();
    parser->body_limit((std::numeric_limits<std::uint64_t>::max)());
    if (head) parser->skip(true);
    conn = co_await Acquire(ui, w, attempt > 0, timeouts.connect, ec);
    if (!conn) break;
    UpstreamConn& up = *conn->conn;
    out.first_byte_at = Deadline::Clock::now() + timeouts.first_byte;
    up.deadline.At(out.first_byte_at);
    if (ureq.chunked())
      co_await bhttp::async_write(up.stream, ureq, asio::redirect_error(kUseTask, ec));
    else
      co_await asio::async_write(up.stream, http::HeadAndBody(ureq, &out.head),
                                 asio::redirect_error(kUseTask, ec));
    if (!ec) {
      ex.upstream_sent_mono_ns = MonoNanos();
      if (observe && !dispatched) {
        dispatched = true;
        for (openai::ExchangeListener* l : listeners) l->OnExchangeDispatched(ex);
      }
      watch.upstream = &up.stream;
      // The engine's answer is often in the socket already by the time this coroutine runs
      // again (nearly always at saturation, when the worker has a queue of completions to go
      // through): read then, it leaves nothing to watch the client for yet, and the watch's
      // peek, which would find nothing (a system call per request), and its cancellation (a
      // turn of the loop) are saved. HandleOne arms the watch if the body is still to come.
      // Under light load the answer is seldom there yet: after a look that found nothing the
      // worker watches first for kSkipEarlyReads requests.
      bool arrived = false;
      if (w->skip_early_reads > 0) {
        --w->skip_early_reads;
      } else if (!(arrived = ReadArrived(up))) {
        w->skip_early_reads = kSkipEarlyReads;
      }
      if (!watching && !arrived) {
        watching = true;
        ArmWatch(watch);
      }
      co_await bhttp::async_read_header(up.stream, up.buffer, *parser,
                                        asio::redirect_error(kUseTask, ec));
    }
    MapTimeout(ec, up.deadline);
    if (!ec || watch.client_gone) break;
    bool stale =
        conn->reused && (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                         ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    if (!stale) break;
    watch.upstream = nullptr;  // the next attempt's connection replaces this one
  }
}

Gateway::Impl::ResponseHead Gateway::Impl::TakeResponseHead(
    const bhttp::response_parser<bhttp::buffer_body>& rp, const UpstreamConn& up,
    bhttp::verb method, unsigned client_version, bool client_keep_alive, bool observe, Exchange& ex,
    ClientWatch& watch) {
  ResponseHead out;
  const auto& ures = rp.get();
  out.sse = ures[bhttp::field::content_type].rfind("text/event-stream", 0) == 0;
  ex.streamed = out.sse;
  out.modify = observe && out.sse;
  out.head = MakeClientHead(ures, rp.content_length(), method, client_version,
                            /*reframe=*/out.modify, client_keep_alive);
  // Unwatched so far (Forward): the client is watched while the rest of the body comes.
  if (!watch.armed && !rp.is_done() &&
      !(rp.content_length() && up.buffer.size() >= *rp.content_length()))
    ArmWatch(watch);
  return out;
}

Task<bool> Gateway::Impl::HandleOne(std::size_t ui, Worker* w, WorkerSocket& client, Deadline& cdl,
                                    bhttp::request<bhttp::string_body>& req) {
  const UpstreamConfig& uc = upstreams[ui].config;
  auto settings = gw->config_->Current();
  const UpstreamTimeouts timeouts = UpstreamTimeouts::From(*settings);

  openai::Exchange ex;
  bhttp::request<bhttp::string_body> ureq{req.method(), req.target(), 11};
  openai::StreamObserver::Options stream_opts;
  const bool observe = PrepareExchange(ui, settings, req, ex, ureq, stream_opts);

  const bool client_keep_alive = req.keep_alive();
  const unsigned client_version = req.version();
  // Answers the client with an error in OpenAI's shape and ends the exchange, whose outcome
  // is set.
  auto answer_error = [&](unsigned status, std::string_view type,
                          std::string_view message) -> Task<bool> {
    ex.http_status = status;
    co_await WriteSimple(client, cdl, client_version, status,
                         http::JsonErrorBody(status, type, message), client_keep_alive);
    ex.end_mono_ns = MonoNanos();
    if (observe) Finish(ex);
    co_return client_keep_alive;
  };
  // The engine failed before any of its answer reached the client: a clean 502 or 504.
  auto fail_upstream = [&](UpstreamFailure f, std::string_view detail) -> Task<bool> {
    const FailureReport r = NoteUpstreamFailure(ui, f, timeouts, detail, ex);
    co_return co_await answer_error(r.status, r.json_type, r.message);
  };
  if (!upstreams[ui].ready->load(std::memory_order_acquire)) {
    ex.outcome = Outcome::kUpstreamUnavailable;
    ex.error_type = "ServiceUnavailable";
    ex.error_message = fmt::format("engine at {} is not ready yet", uc.url.HostPort());
    co_return co_await answer_error(503, ex.error_type, ex.error_message);
  }

  Forwarded fwd;
  std::optional<Pooled>& conn = fwd.conn;
  std::optional<bhttp::response_parser<bhttp::buffer_body>>& parser = fwd.parser;
  WatchGuard guard;
  ClientWatch& watch = guard.watch;
  // The client went away before the response was complete (the engine's request was closed
  // with it): the exchange ends as aborted and the connection is not reused.
  auto end_as_aborted = [&](std::string_view message) {
    stats().client_aborts.fetch_add(1, std::memory_order_relaxed);
    guard.Stop();
    ex.http_status = 499;
    ex.outcome = openai::Outcome::kClientAborted;
    ex.error_type = "client_disconnected";
    ex.error_message = std::string(message);
    ex.end_mono_ns = MonoNanos();
    if (observe) Finish(ex);
  };
  watch.client = &client;
  co_await Forward(ui, w, timeouts, ureq, req.method() == bhttp::verb::head, ex, observe, guard,
                   fwd);
  error_code ec = fwd.ec;
  const Deadline::Clock::time_point first_byte_at = fwd.first_byte_at;
  if (watch.client_gone) {
    end_as_aborted("client closed the connection before the engine answered");
    co_return false;
  }
  if (!conn || ec) {
    guard.Stop();
    co_return co_await fail_upstream(ForwardFailure(fwd), ec.message());
  }
  ex.response_header_mono_ns = MonoNanos();
  UpstreamConn& up = *conn->conn;
  auto& rp = *parser;

  // Response header toward the client.
  ex.http_status = rp.get().result_int();
  if (ex.http_status < 100 || ex.http_status > 599) {
    // Beast would write it as `000`; RFC 9110 §15 has no status outside 100–599.
    guard.Stop();
    co_return co_await fail_upstream(UpstreamFailure::kInvalidStatus,
                                     std::to_string(ex.http_status));
  }
  ResponseHead rh =
      TakeResponseHead(rp, up, req.method(), client_version, client_keep_alive, observe, ex, watch);
  ClientHead& head = rh.head;
  const bool sse = rh.sse, modify = rh.modify, keep_client = head.keep_client;

  Relay r{.ui = ui,
          .client = client,
          .cdl = cdl,
          .up = up,
          .rp = rp,
          .head = head,
          .ex = ex,
          .timeouts = timeouts,
          .stream_opts = stream_opts,
          .watch = watch,
          .first_byte_at = first_byte_at,
          .observe = observe,
          .sse = sse,
          .modify = modify};
  const RelayEnd end = co_await RelayBody(r, w);
  if (end == RelayEnd::kClientGone) {
    end_as_aborted("client closed the connection before the response was complete");
    co_return false;
  }
  if (end == RelayEnd::kCleanFailure) {
    // Nothing reached the client yet: it gets a clean error instead of a cut body.
    guard.Stop();
    co_return co_await fail_upstream(
        BodyFailure(r.uec == beast::error::timeout, IsFramingError(r.uec), /*sse=*/false,
                    /*body_started=*/true),
        r.uec.message());
  }
  guard.Stop();
  co_return EndExchange(r, w, std::move(*conn)) && keep_client;
}

// The relay stage: a body of known, moderate length is read whole and leaves with its header
// in one write (one system call instead of three). A non-stream response whose logprobs only
// the gateway asked for is held whole too, so they can be removed and the length corrected
// before the client sees it. So is an OpenAI answer of unknown length (chunked, or until the
// engine closes) up to kWholeBodyMax: a framing error within it becomes a clean 502 rather
// than a 200 whose body is cut. Everything else is relayed as it comes.
Task<Gateway::Impl::RelayEnd> Gateway::Impl::RelayBody(Relay& r, Worker* w) {
  const auto length = r.rp.content_length();
  const bool plain = !r.sse && !r.head.head_only;
  r.hold_body = plain && (r.ex.logprobs_forced || (r.observe && !length));
  const bool whole =
      plain && length &&
      (*length <= kWholeBodyMax || (r.hold_body && *length <= opts().max_observed_body));
  if (whole) co_return co_await RelayWhole(r);
  co_return co_await RelayPieces(r, w);
}

// The last stage, once the body went as far as it could: the engine connection kept or
// closed, the exchange settled. Returns whether the exchange completed (every byte of the
// response reached the client, which is still there).
bool Gateway::Impl::EndExchange(Relay& r, Worker* w, Pooled&& conn) {
  Exchange& ex = r.ex;
  // Every byte of the response reached the client's socket, or a stream's [DONE] did: a client
  // that closes after it (the openai SDKs stop reading at [DONE], before the chunked body's last
  // chunk, and the watch then cancels the engine's read) has not aborted anything.
  const bool delivered = r.done_delivered || (!r.uec && !r.client_write_failed);
  ex.end_mono_ns = MonoNanos();
  const bool complete = !r.uec && !r.client_write_failed && !r.watch.client_gone;
  if (complete && r.rp.keep_alive()) {
    Release(r.ui, w, std::move(conn));
  } else {
    error_code cec;
    r.up.stream.shutdown(WorkerSocket::shutdown_both, cec);
    r.up.stream.close(cec);
  }
  // The engine's failure is the cause even when telling the client about it failed too.
  const bool aborted = !r.failure && !delivered && (r.client_write_failed || r.watch.client_gone);
  if (aborted) stats().client_aborts.fetch_add(1, std::memory_order_relaxed);
  if (r.observe) {
    SettleExchange(r.ui, ex, r.observed_body, r.stream_opts.capture, r.body_parsed,
                   /*can_parse=*/!r.observed_overflow && !ex.logprobs_forced, r.head.head_only,
                   r.failure.has_value(), aborted);
  }
  return complete;
}

// A body of known length, read whole and written with its header in one write; logprobs the
// gateway asked for are removed first.
Task<Gateway::Impl::RelayEnd> Gateway::Impl::RelayWhole(Relay& r) {
  auto& ures = r.rp.get();
  r.observed_body.resize(static_cast<std::size_t>(*r.rp.content_length()));
  ures.body().data = r.observed_body.data();
  ures.body().size = r.observed_body.size();
  r.up.deadline.After(r.timeouts.idle);
  if (!r.rp.is_done()) {
    // A body longer than the connection's 8 KiB buffer (long completions, logprobs,
    // embeddings) in 64 KiB reads; a typical answer is already whole and needs no room.
    http::MakeRoomForBody(r.up.buffer, r.rp);
    co_await bhttp::async_read(r.up.stream, r.up.buffer, r.rp,
                               asio::redirect_error(kUseTask, r.uec));
    http::ReleaseBodyRoom(r.up.buffer, kReadChunk);
  }
  MapTimeout(r.uec, r.up.deadline);
  if (r.uec == bhttp::error::need_buffer && r.rp.is_done()) r.uec = {};
  if (r.watch.client_gone) co_return RelayEnd::kClientGone;
  if (r.uec) co_return RelayEnd::kCleanFailure;
  if (r.ex.logprobs_forced) {
    r.ex.response = openai::ParseResponse(r.ex.op, r.observed_body, r.stream_opts.capture);
    r.body_parsed = true;
    if (auto stripped = openai::StripInjectedLogprobs(r.observed_body)) {
      r.observed_body = std::move(*stripped);
      r.head.res.content_length(r.observed_body.size());
    }
  }
  bhttp::response<bhttp::string_body> full{std::move(r.head.res.base()),
                                           std::move(r.observed_body)};
  r.cdl.After(kClientWriteTimeout);
  error_code wec;
  const std::uint64_t since = MonoNanos();
  std::string head;
  co_await asio::async_write(r.client, http::HeadAndBody(full, &head),
                             asio::redirect_error(kUseTask, wec));
  // A write the socket takes at once costs microseconds: only a longer one waited on the client.
  if (const std::uint64_t took = MonoNanos() - since; took >= kClientWaitFloorNs)
    r.ex.client_wait_ns += took;
  r.cdl.Never();
  if (wec) r.client_write_failed = true;
  r.observed_body = std::move(full.body());
  r.hold_body = false;
  co_return RelayEnd::kRelayed;
}

// A stream, a long body or one of unknown length, relayed piece by piece as the engine sends
// it (a held body is answered at its end).
Task<Gateway::Impl::RelayEnd> Gateway::Impl::RelayPieces(Relay& r, Worker* w) {
  ClientWriter out(r);
  if (!r.hold_body) co_await out.Header();
  openai::StreamObserver observer(r.ex.op, r.stream_opts);
  SseRelay relay(&observer);
  WatchTokenDetail(r, relay, observer);
  std::string scratch;
  ChunkLease chunk(&w->chunks);
  char* buf = chunk.data();
  std::size_t piece = kReadChunk;
  // A body too long to read whole (a large embeddings batch, long logprobs) is relayed in
  // pieces of up to 64 KiB, as the connection's buffer then reads it, instead of 8 KiB.
  // Streams keep 8 KiB pieces: an event is small and must leave as soon as it arrives.
  std::unique_ptr<char[]> long_piece;
  const bool long_body = !r.sse && !r.head.head_only && r.rp.content_length() &&
                         *r.rp.content_length() > kWholeBodyMax;
  if (long_body) {
    long_piece = std::make_unique_for_overwrite<char[]>(http::kBodyReadRoom);
    buf = long_piece.get();
    piece = http::kBodyReadRoom;
    http::MakeRoomForBody(r.up.buffer, r.rp);
  }
  if (r.sse) stats().active_streams.fetch_add(1, std::memory_order_relaxed);
  auto& ures = r.rp.get();
  bool body_started = false;
  while (!r.client_write_failed && !r.rp.is_done()) {
    ures.body().data = buf;
    ures.body().size = piece;
    if (r.sse && !body_started)
      r.up.deadline.At(r.first_byte_at);
    else
      r.up.deadline.After(r.timeouts.idle);
    co_await bhttp::async_read_some(r.up.stream, r.up.buffer, r.rp,
                                    asio::redirect_error(kUseTask, r.uec));
    MapTimeout(r.uec, r.up.deadline);
    if (r.uec == bhttp::error::need_buffer) r.uec = {};
    if (const std::size_t n = piece - ures.body().size; n > 0) {
      body_started = true;
      const std::string_view bytes(buf, n);
      if (r.modify) {
        if (!StreamPiece(r, relay, observer, bytes, &scratch, out)) co_await out.Rest();
        r.done_delivered = observer.saw_done() && !r.client_write_failed;
      } else if (r.hold_body) {
        if (!Hold(r, bytes)) co_await Spill(r, out, bytes);
      } else {
        ObserveBody(r, bytes);
        if (!out.Now(bytes)) co_await out.Rest();
      }
    }
    if (r.uec) break;
  }
  if (r.uec && r.hold_body && !r.watch.client_gone) co_return RelayEnd::kCleanFailure;
  co_await EndPieces(r, out, relay, body_started);
  if (r.sse) stats().active_streams.fetch_sub(1, std::memory_order_relaxed);
  if (long_body) http::ReleaseBodyRoom(r.up.buffer, kReadChunk);
  if (r.observe && r.modify) {
    r.ex.response = observer.Finish();
    r.ex.stream_deltas = observer.delta_count();
    r.body_parsed = true;
  }
  co_return RelayEnd::kRelayed;
}

// Token detail of each delta for the DECODE events, where the engine's level wants it.
void Gateway::Impl::WatchTokenDetail(Relay& r, SseRelay& relay,
                                     const openai::StreamObserver& observer) {
  if (!r.modify || !engines::Profile(r.ex.engine).TokenDetailAt(r.ex.tracing_level)) return;
  relay.set_on_data([&ex = r.ex, &observer, last = std::int64_t{0}, this]() mutable {
    if (observer.delta_count() == last) return;
    last = observer.delta_count();
    if (ex.deltas.size() >= opts().max_span_events) {
      ++ex.deltas_dropped;
      return;
    }
    const auto& t = observer.last_tokens();
    if (!t.texts.empty()) {
      ex.deltas.push_back({MonoNanos(), t.texts, t.logprobs, t.ids,
                           static_cast<std::int64_t>(t.texts.size()), false});
    } else {  // no token detail from the engine: the content stands in for it
      ex.deltas.push_back({MonoNanos(), t.content, {}, {}, t.content_pieces, true});
    }
  });
}

// A piece of a stream the gateway rewrites: fed to the relay, which observes it; what the
// relay gives is written, and the new deltas' arrival noted. False when `out` has bytes left
// for its Rest.
bool Gateway::Impl::StreamPiece(Relay& r, SseRelay& relay, const openai::StreamObserver& observer,
                                std::string_view bytes, std::string* scratch, ClientWriter& out) {
  scratch->clear();
  const std::int64_t before = observer.delta_count();
  relay.Feed(bytes, scratch);
  if (observer.delta_count() > before) {
    const std::uint64_t now = MonoNanos();
    if (r.ex.first_token_mono_ns == 0) r.ex.first_token_mono_ns = now;
    r.ex.delta_times.Add(now, observer.delta_count() - before);
  }
  return out.Now(*scratch);
}

// A piece of a held body kept; false when the body grew too large to hold.
bool Gateway::Impl::Hold(Relay& r, std::string_view bytes) {
  const std::size_t limit = r.ex.logprobs_forced ? opts().max_observed_body : kWholeBodyMax;
  if (r.observed_body.size() + bytes.size() > limit) return false;
  r.observed_body.append(bytes);
  return true;
}

// A held body too large to hold: what was held and the rest are relayed as they arrive
// (logprobs the gateway asked for are then left in). A framing error from here on can only
// cut the body: the client sees a chunked body without its end, or a short one.
Task<void> Gateway::Impl::Spill(Relay& r, ClientWriter& out, std::string_view bytes) {
  r.hold_body = false;
  co_await out.Header();
  if (!out.Now(r.observed_body)) co_await out.Rest();
  if (!out.Now(bytes)) co_await out.Rest();
  if (r.observed_body.size() + bytes.size() <= opts().max_observed_body && !r.ex.logprobs_forced) {
    r.observed_body.append(bytes);
  } else {
    r.observed_overflow = true;
    r.observed_body.clear();
  }
}

// A relayed piece kept for parsing, up to max_observed_body.
void Gateway::Impl::ObserveBody(Relay& r, std::string_view bytes) {
  if (!r.observe || r.observed_overflow) return;
  if (r.observed_body.size() + bytes.size() <= opts().max_observed_body)
    r.observed_body.append(bytes);
  else
    r.observed_overflow = true;
}

// The end of a relayed body: a held one answered, the stream's tail, a failure of the engine
// noted (and told to a stream's client as an error event), the last chunk.
Task<void> Gateway::Impl::EndPieces(Relay& r, ClientWriter& out, SseRelay& relay,
                                    bool body_started) {
  if (r.hold_body && !r.uec && !r.client_write_failed) co_await AnswerHeld(r, out);
  if (r.modify && !r.uec && !r.client_write_failed) {
    std::string tail;
    relay.Finish(&tail);
    if (!out.Now(tail)) co_await out.Rest();
  }
  bool told_client = false;  // the failure went to the client as an SSE error event
  if (r.uec && !r.client_write_failed && !r.watch.client_gone) {
    r.failure =
        BodyFailure(r.uec == beast::error::timeout, IsFramingError(r.uec), r.sse, body_started);
    const FailureReport report =
        NoteUpstreamFailure(r.ui, *r.failure, r.timeouts, r.uec.message(), r.ex);
    // A stream the client can still be told about: an error event, [DONE], a clean end (an
    // incomplete line the relay held back is dropped). A plain body can only be cut.
    if (r.sse && !r.head.head_only && (r.head.chunked_out || r.head.close_delimited_out)) {
      if (!out.Now(SseErrorEvent(report))) co_await out.Rest();
      told_client = !r.client_write_failed;
    }
  }
  if ((!r.uec || told_client) && !r.client_write_failed && r.head.chunked_out)
    co_await out.LastChunk();
}

// A held body, whole: parsed, the logprobs the gateway asked for removed, and written with
// its length.
Task<void> Gateway::Impl::AnswerHeld(Relay& r, ClientWriter& out) {
  r.ex.response = openai::ParseResponse(r.ex.op, r.observed_body, r.stream_opts.capture);
  r.body_parsed = true;
  if (r.ex.logprobs_forced) {
    if (auto stripped = openai::StripInjectedLogprobs(r.observed_body))
      r.observed_body = std::move(*stripped);
  }
  if (r.head.chunked_out) {
    r.head.res.chunked(false);
    r.head.chunked_out = false;
  }
  r.head.res.content_length(r.observed_body.size());
  co_await out.Header();
  if (!out.Now(r.observed_body)) co_await out.Rest();
}

}  // namespace infertel::gateway
