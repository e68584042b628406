#include "receiver/otlp_receiver.h"

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <atomic>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "common/http_wire.h"
#include "core/stats.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "otlp/gzip.h"
#include "otlp/json.h"
#include "otlp/partial_success.h"

namespace infertel::receiver {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

template <typename Request>
class RecordingSink : public pipeline::Sink<Request> {
 public:
  void Submit(Request&& r) noexcept override {
    std::lock_guard lock(mu_);
    got_.push_back(std::move(r));
    if (room > 0) --room;
  }
  // The receivers decode onto an arena and hand the request on without a copy.
  void SubmitHeld(pipeline::Held<Request>&& r) noexcept override {
    if (r.request->GetArena() == r.memory->arena()) ++on_arena;
    Submit(pipeline::CopyOut(r));
  }
  std::atomic<int> on_arena{0};
  bool Saturated(std::size_t) const noexcept override {
    // Room that lasts for one look: gone by the time anyone else looks.
    for (int f = fleeting_room.load(); f > 0;)
      if (fleeting_room.compare_exchange_weak(f, f - 1)) return false;
    return room >= 0 ? room == 0 : saturated.load();
  }
  mutable std::atomic<int> fleeting_room{0};
  std::atomic<bool> saturated{false};
  // When not negative: saturated while 0, and each request taken uses one (a queue that has
  // room for that many more requests).
  std::atomic<int> room{-1};
  std::vector<Request> got() const {
    std::lock_guard lock(mu_);
    return got_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Request> got_;
};

std::string Id(std::size_t n, char fill) { return std::string(n, fill); }

// A request with one resource and scope and the given (trace_id, span_id) pairs.
TracesRequest Traces(const std::vector<std::pair<std::string, std::string>>& ids) {
  TracesRequest r;
  auto* ss = r.add_resource_spans()->add_scope_spans();
  int i = 0;
  for (const auto& [t, s] : ids) {
    auto* span = ss->add_spans();
    span->set_name("span" + std::to_string(i++));
    span->set_trace_id(t);
    span->set_span_id(s);
  }
  return r;
}

TracesRequest ValidTraces(int n) {
  std::vector<std::pair<std::string, std::string>> ids;
  for (int i = 0; i < n; ++i) ids.push_back({Id(16, 'a' + i), Id(8, 'k' + i)});
  return Traces(ids);
}

LogsRequest Logs(int n) {
  LogsRequest r;
  auto* sl = r.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < n; ++i) sl->add_log_records()->mutable_body()->set_string_value("hello");
  return r;
}

MetricsRequest Metrics(int n) {
  MetricsRequest r;
  auto* sm = r.add_resource_metrics()->add_scope_metrics();
  for (int i = 0; i < n; ++i) {
    auto* m = sm->add_metrics();
    m->set_name("m" + std::to_string(i));
    m->mutable_gauge()->add_data_points()->set_as_int(i);
  }
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct HttpResult {
  unsigned status = 0;
  std::string content_type;
  std::string retry_after;
  std::string body;
};

// One request per connection unless `stream` is given.
HttpResult Post(std::uint16_t port, const std::string& target, const std::string& content_type,
                const std::string& body, const std::string& content_encoding = "",
                bhttp::verb verb = bhttp::verb::post) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  bhttp::request<bhttp::string_body> req{verb, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  if (!content_type.empty()) req.set(bhttp::field::content_type, content_type);
  if (!content_encoding.empty()) req.set(bhttp::field::content_encoding, content_encoding);
  req.body() = body;
  req.prepare_payload();
  bhttp::write(stream, req);
  beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(1 << 24);
  boost::system::error_code ec;
  bhttp::read(stream, buf, parser, ec);
  HttpResult out;
  if (ec) return out;
  out.status = parser.get().result_int();
  out.content_type = std::string(parser.get()[bhttp::field::content_type]);
  out.retry_after = std::string(parser.get()[bhttp::field::retry_after]);
  out.body = parser.get().body();
  return out;
}

class ReceiverTest : public ::testing::Test {
 protected:
  void StartReceiver(bool with_logs_metrics = true, std::size_t max_bytes = 64 * 1024) {
    OtlpReceiverOptions o;
    o.grpc_address = "127.0.0.1:0";
    o.http_address = "127.0.0.1:0";
    o.max_message_bytes = max_bytes;
    o.threads = 2;
    o.saturated_wait = saturated_wait_;
    o.span_limits = span_limits_;
    ReceiverSinks sinks{&traces_, with_logs_metrics ? &logs_ : nullptr,
                        with_logs_metrics ? &metrics_ : nullptr};
    receiver_ = std::make_unique<OtlpReceiver>(o, sinks);
    std::string error;
    ASSERT_TRUE(receiver_->Start(&error)) << error;
    ASSERT_NE(receiver_->grpc_port(), 0);
    ASSERT_NE(receiver_->http_port(), 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(receiver_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    if (receiver_) receiver_->Stop();
  }
  const ReceiverCounters& C(Transport t, Signal s) { return receiver_->stats().at(t, s); }
  // Short, so that the tests of refusals also wait (and still find the sink saturated).
  std::chrono::milliseconds saturated_wait_{50};
  SpanLimits span_limits_;
  // One gRPC trace export of `n` valid spans, from any thread.
  grpc::Status ExportTraces(int n, std::chrono::milliseconds deadline = std::chrono::seconds(30)) {
    auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    otlp_collector_trace::ExportTraceServiceResponse resp;
    return stub->Export(&ctx, ValidTraces(n), &resp);
  }
  // Until `n` trace requests over `t` have started to wait (at most 10 s).
  void UntilWaiting(Transport t, std::uint64_t n) {
    for (int i = 0; i < 1000 && C(t, Signal::kTraces).waited_requests.load() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_GE(C(t, Signal::kTraces).waited_requests.load(), n);
  }
  // The traces counters of waiting for room, the same on both transports.
  void ExpectWaitCounts(std::uint64_t throttled, std::uint64_t waited) {
    for (Transport t : {Transport::kGrpc, Transport::kHttp}) {
      EXPECT_EQ(C(t, Signal::kTraces).throttled_requests.load(), throttled) << TransportName(t);
      EXPECT_EQ(C(t, Signal::kTraces).waited_requests.load(), waited) << TransportName(t);
    }
  }
  std::size_t SinkSpans() {
    std::size_t n = 0;
    for (const auto& r : traces_.got()) n += CountSpans(r);
    return n;
  }

  RecordingSink<TracesRequest> traces_;
  RecordingSink<LogsRequest> logs_;
  RecordingSink<MetricsRequest> metrics_;
  std::unique_ptr<OtlpReceiver> receiver_;
  std::shared_ptr<grpc::Channel> channel_;
};

// ---------- Normalization and span limits (both transports) ----------

constexpr std::uint64_t k2To63 = std::uint64_t{1} << 63;

TEST(NormalizeSpansTest, EachShapeIsSetRightMarkedAndCounted) {
  TracesRequest r = ValidTraces(6);
  auto* spans = r.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
  for (auto& s : *spans) {
    s.set_start_time_unix_nano(1000);
    s.set_end_time_unix_nano(2000);
  }
  spans->Mutable(0)->set_end_time_unix_nano(10);      // end before start
  spans->Mutable(1)->set_end_time_unix_nano(k2To63);  // end past 2^63
  spans->Mutable(2)->add_events()->set_time_unix_nano(~std::uint64_t{0});
  spans->Mutable(3)->set_kind(static_cast<Span::SpanKind>(99));
  spans->Mutable(3)->mutable_status()->set_code(static_cast<otlp_trace::Status::StatusCode>(-4));
  spans->Mutable(4)->set_end_time_unix_nano(0);  // missing end
  NormalizeCounts counts{};
  EXPECT_EQ(NormalizeSpans(&r, &counts), 5);
  const auto& got = r.resource_spans(0).scope_spans(0).spans();
  auto mark = [](const Span& s) {
    const AnyValue* v = FindAttr(s.attributes(), "infertel.normalized");
    return v ? v->string_value() : std::string("(none)");
  };
  EXPECT_EQ(got[0].end_time_unix_nano(), 1000u);
  EXPECT_EQ(mark(got[0]), "end_before_start");
  EXPECT_EQ(got[1].end_time_unix_nano(), 1000u);
  EXPECT_EQ(mark(got[1]), "end_time");
  EXPECT_EQ(got[2].events(0).time_unix_nano(), 1000u);
  EXPECT_EQ(mark(got[2]), "event_time");
  EXPECT_EQ(got[3].kind(), Span::SPAN_KIND_UNSPECIFIED);
  EXPECT_EQ(got[3].status().code(), otlp_trace::Status::STATUS_CODE_UNSET);
  EXPECT_EQ(mark(got[3]), "span_kind,status_code");
  EXPECT_EQ(got[4].end_time_unix_nano(), 1000u);
  EXPECT_EQ(mark(got[5]), "(none)");
  EXPECT_EQ(counts[static_cast<int>(NormalizeReason::kEndBeforeStart)], 2u);
  EXPECT_EQ(counts[static_cast<int>(NormalizeReason::kEndTime)], 1u);
  EXPECT_EQ(counts[static_cast<int>(NormalizeReason::kEventTime)], 1u);
  EXPECT_EQ(counts[static_cast<int>(NormalizeReason::kSpanKind)], 1u);
  EXPECT_EQ(counts[static_cast<int>(NormalizeReason::kStatusCode)], 1u);
}

TEST(NormalizeSpansTest, AStartPast2To63IsRefused) {
  TracesRequest r = ValidTraces(2);
  r.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_start_time_unix_nano(
      k2To63);
  std::string error;
  EXPECT_EQ(RemoveInvalid(&r, &error), 1);
  EXPECT_NE(error.find("start_time_unix_nano 9223372036854775808 is not below 2^63"),
            std::string::npos)
      << error;
  EXPECT_EQ(CountSpans(r), 1u);
}

// The gRPC front end decodes without limits (DecodeProtobuf's defaults): the ingestor applies
// them all the same, and counts them, as for HTTP.
TEST_F(ReceiverTest, SpanLimitsApplyOnBothTransportsAndAreCounted) {
  span_limits_.attribute_count = 3;
  StartReceiver(true, 1 << 20);
  TracesRequest req = ValidTraces(1);
  Span* s = req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  for (int i = 0; i < 10; ++i) AddAttr(s->mutable_attributes(), "k" + std::to_string(i), i);
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  grpc::ClientContext ctx;
  otlp_collector_trace::ExportTraceServiceResponse resp;
  ASSERT_TRUE(stub->Export(&ctx, req, &resp).ok());
  const HttpResult h =
      Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", req.SerializeAsString());
  EXPECT_EQ(h.status, 200u);
  const auto got = traces_.got();
  ASSERT_EQ(got.size(), 2u);
  for (const auto& g : got) {
    const Span& gs = g.resource_spans(0).scope_spans(0).spans(0);
    EXPECT_EQ(gs.attributes_size(), 3);
    EXPECT_EQ(gs.dropped_attributes_count(), 7u);
  }
  EXPECT_EQ(receiver_->stats().limited[0].load(), 14u);  // reason="span_attributes"
}

// A metric data point's attributes name its series: one past the limits is refused whole and
// told to the sender (partial success), the others kept; an exemplar's filtered attributes and
// a resource's are trimmed and counted.
TEST_F(ReceiverTest, MetricPointsPastTheLimitsAreRefusedAndExemplarsTrimmed) {
  span_limits_.metric_attribute_count = 4;
  span_limits_.attribute_count = 4;
  span_limits_.resource_attribute_count = 4;
  span_limits_.attribute_value_length = 8;
  StartReceiver(true, 1 << 20);
  MetricsRequest req = Metrics(4);
  auto* rm = req.mutable_resource_metrics(0);
  for (int i = 0; i < 6; ++i)
    AddAttr(rm->mutable_resource()->mutable_attributes(), "r" + std::to_string(i), i);
  auto* metrics = rm->mutable_scope_metrics(0)->mutable_metrics();
  auto* wide = metrics->Mutable(0)->mutable_gauge()->mutable_data_points(0)->mutable_attributes();
  for (int i = 0; i < 5; ++i) AddAttr(wide, "k" + std::to_string(i), i);
  AddAttr(metrics->Mutable(1)->mutable_gauge()->mutable_data_points(0)->mutable_attributes(),
          "long", std::string_view("123456789"));
  auto* kept = metrics->Mutable(2)->mutable_gauge()->mutable_data_points(0);
  AddAttr(kept->mutable_attributes(), "short", std::string_view("12345678"));
  auto* ex = kept->add_exemplars();
  for (int i = 0; i < 7; ++i)
    AddAttr(ex->mutable_filtered_attributes(), "e" + std::to_string(i), i);
  const HttpResult h = Post(receiver_->http_port(), "/v1/metrics", "application/json",
                            otlp_json::EncodeMetrics(req));
  EXPECT_EQ(h.status, 200u);
  EXPECT_NE(h.body.find(R"("rejectedDataPoints":"2")"), std::string::npos) << h.body;
  EXPECT_NE(h.body.find("a data point has 5 attributes, more than the limit of 4"),
            std::string::npos)
      << h.body;
  const auto got = metrics_.got();
  ASSERT_EQ(got.size(), 1u);
  const auto& gm = got[0].resource_metrics(0);
  EXPECT_EQ(gm.resource().attributes_size(), 4);
  EXPECT_EQ(gm.resource().dropped_attributes_count(), 2u);
  const auto& left = gm.scope_metrics(0).metrics();  // those left without a point go
  ASSERT_EQ(left.size(), 2);
  EXPECT_EQ(left[0].name(), "m2");
  ASSERT_EQ(left[0].gauge().data_points_size(), 1);
  EXPECT_EQ(left[0].gauge().data_points(0).exemplars(0).filtered_attributes_size(), 4);
  EXPECT_EQ(left[1].name(), "m3");
  EXPECT_EQ(C(Transport::kHttp, Signal::kMetrics).refused_items.load(), 2u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kMetrics).items.load(), 2u);
  EXPECT_EQ(receiver_->stats().limited[5].load(), 2u);   // reason="resource_attributes"
  EXPECT_EQ(receiver_->stats().limited[11].load(), 3u);  // reason="exemplar_attributes"
  EXPECT_EQ(LimitReasonName(11), "exemplar_attributes");
}

// ---------- gRPC ----------

TEST_F(ReceiverTest, GrpcTracesReachTheSinkAndAreCounted) {
  StartReceiver();
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  grpc::ClientContext ctx;
  otlp_collector_trace::ExportTraceServiceResponse resp;
  TracesRequest req = ValidTraces(2);
  grpc::Status st = stub->Export(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.ByteSizeLong(), 0u);  // no partial_success on full success
  auto got = traces_.got();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].SerializeAsString(), req.SerializeAsString());
  EXPECT_EQ(traces_.on_arena.load(), 1);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).requests.load(), 1u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).items.load(), 2u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).requests.load(), 0u);
}

// A message of about 400 KB arrives in many slices, which the receiver joins before decoding
// (grpc_frontend.cc, Contiguous); an empty one is a valid request with no spans.
TEST_F(ReceiverTest, GrpcLargeAndEmptyRequestsAreDecoded) {
  StartReceiver(true, 1 << 20);
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  TracesRequest large = ValidTraces(1);
  const Span first = large.resource_spans(0).scope_spans(0).spans(0);
  auto* spans = large.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
  for (int i = 1; i < 2000; ++i) {
    Span* s = spans->Add();
    *s = first;
    s->set_name("span-" + std::to_string(i) + std::string(150, 'x'));
    AddAttr(s->mutable_attributes(), "gen_ai.request.id", "chatcmpl-" + std::to_string(i));
  }
  ASSERT_GT(large.ByteSizeLong(), 300'000u);
  {
    grpc::ClientContext ctx;
    otlp_collector_trace::ExportTraceServiceResponse resp;
    grpc::Status st = stub->Export(&ctx, large, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  auto got = traces_.got();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].SerializeAsString(), large.SerializeAsString());
  {
    grpc::ClientContext ctx;
    otlp_collector_trace::ExportTraceServiceResponse resp;
    grpc::Status st = stub->Export(&ctx, TracesRequest(), &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).requests.load(), 2u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).malformed_requests.load(), 0u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).items.load(), 2000u);
}

TEST_F(ReceiverTest, GrpcGzipIsAccepted) {
  StartReceiver();
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  otlp_collector_trace::ExportTraceServiceResponse resp;
  ASSERT_TRUE(stub->Export(&ctx, ValidTraces(3), &resp).ok());
  EXPECT_EQ(SinkSpans(), 3u);
}

TEST_F(ReceiverTest, GrpcPartialSuccessPassesValidSpansOn) {
  StartReceiver();
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  grpc::ClientContext ctx;
  otlp_collector_trace::ExportTraceServiceResponse resp;
  TracesRequest req =
      Traces({{Id(16, 'a'), Id(8, 'b')}, {Id(5, 'c'), Id(8, 'd')}, {Id(16, 'e'), Id(8, 'f')}});
  grpc::Status st = stub->Export(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // The compiled response has no partial_success field: it survives as an unknown field.
  otlp::PartialSuccess ps;
  ASSERT_TRUE(otlp::ParsePartialSuccessProto(resp.SerializeAsString(), &ps));
  EXPECT_EQ(ps.rejected, 1);
  EXPECT_NE(ps.error_message.find("trace_id has 5 bytes"), std::string::npos) << ps.error_message;
  EXPECT_NE(ps.error_message.find("span1"), std::string::npos) << ps.error_message;
  auto got = traces_.got();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(CountSpans(got[0]), 2u);
  EXPECT_EQ(got[0].resource_spans(0).scope_spans(0).spans(0).name(), "span0");
  EXPECT_EQ(got[0].resource_spans(0).scope_spans(0).spans(1).name(), "span2");
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).items.load(), 2u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).refused_items.load(), 1u);
}

TEST_F(ReceiverTest, GrpcAllInvalidIsInvalidArgument) {
  StartReceiver();
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  grpc::ClientContext ctx;
  otlp_collector_trace::ExportTraceServiceResponse resp;
  grpc::Status st = stub->Export(&ctx, Traces({{"", Id(8, 'b')}}), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("trace_id is empty"), std::string::npos) << st.error_message();
  EXPECT_TRUE(traces_.got().empty());
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).refused_items.load(), 1u);
}

TEST_F(ReceiverTest, GrpcUndecodablePayloadIsCounted) {
  StartReceiver();
  grpc::GenericStub stub(channel_);
  grpc::ClientContext ctx;
  const std::string garbage =
      "\x0a\x05"
      "ab";  // a length-delimited field cut short
  grpc::Slice slice(garbage);
  grpc::ByteBuffer req(&slice, 1), resp;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", {}, &req,
                 &resp, [&](grpc::Status s) { done.set_value(s); });
  grpc::Status st = done.get_future().get();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).malformed_requests.load(), 1u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).requests.load(), 1u);
  EXPECT_TRUE(traces_.got().empty());
}

TEST_F(ReceiverTest, GrpcOversizedMessageIsRefusedByGrpc) {
  StartReceiver(true, 4096);
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  grpc::ClientContext ctx;
  otlp_collector_trace::ExportTraceServiceResponse resp;
  TracesRequest req = ValidTraces(1);
  req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_name(
      std::string(10000, 'x'));
  EXPECT_EQ(stub->Export(&ctx, req, &resp).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(traces_.got().empty());
}

TEST_F(ReceiverTest, GrpcLogsAndMetricsReachTheirSinks) {
  StartReceiver();
  {
    auto stub = otlp_collector_logs::LogsService::NewStub(channel_);
    grpc::ClientContext ctx;
    otlp_collector_logs::ExportLogsServiceResponse resp;
    ASSERT_TRUE(stub->Export(&ctx, Logs(3), &resp).ok());
  }
  {
    auto stub = otlp_collector_metrics::MetricsService::NewStub(channel_);
    grpc::ClientContext ctx;
    otlp_collector_metrics::ExportMetricsServiceResponse resp;
    ASSERT_TRUE(stub->Export(&ctx, Metrics(2), &resp).ok());
  }
  ASSERT_EQ(logs_.got().size(), 1u);
  EXPECT_EQ(CountItems(logs_.got()[0]), 3u);
  ASSERT_EQ(metrics_.got().size(), 1u);
  EXPECT_EQ(CountItems(metrics_.got()[0]), 2u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kLogs).items.load(), 3u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kMetrics).items.load(), 2u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kLogs).dropped_items.load(), 0u);
}

TEST_F(ReceiverTest, SignalWithoutSinkIsAnsweredAndCountedAsDropped) {
  StartReceiver(/*with_logs_metrics=*/false);
  auto stub = otlp_collector_logs::LogsService::NewStub(channel_);
  grpc::ClientContext ctx;
  otlp_collector_logs::ExportLogsServiceResponse resp;
  ASSERT_TRUE(stub->Export(&ctx, Logs(4), &resp).ok());
  HttpResult r = Post(receiver_->http_port(), "/v1/metrics", "application/x-protobuf",
                      Metrics(2).SerializeAsString());
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kLogs).dropped_items.load(), 4u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kMetrics).dropped_items.load(), 2u);
  EXPECT_TRUE(logs_.got().empty());
}

// ---------- HTTP ----------

// A saturated pipeline (export queues nearly full) is answered "retry later" on both
// transports, before decoding, and nothing reaches the sink; OTLP exporters retry these.
TEST_F(ReceiverTest, SaturatedSinkIsAnsweredRetryLater) {
  StartReceiver();
  traces_.saturated = true;
  auto stub = otlp_collector_trace::TraceService::NewStub(channel_);
  {
    grpc::ClientContext ctx;
    otlp_collector_trace::ExportTraceServiceResponse resp;
    grpc::Status st = stub->Export(&ctx, ValidTraces(2), &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_NE(st.error_message().find("retry later"), std::string::npos) << st.error_message();
    // The delay, as a google.rpc.RetryInfo in the trailer OpenTelemetry's gRPC exporters
    // read: field 1, a google.protobuf.Duration of 1 s (HTTP's Retry-After below).
    const auto& trailers = ctx.GetServerTrailingMetadata();
    auto it = trailers.find("google.rpc.retryinfo-bin");
    ASSERT_NE(it, trailers.end());
    google::protobuf::UnknownFieldSet retry_info;
    ASSERT_TRUE(retry_info.ParseFromString(std::string(it->second.data(), it->second.size())));
    ASSERT_EQ(retry_info.field_count(), 1);
    ASSERT_EQ(retry_info.field(0).number(), 1);
    ASSERT_EQ(retry_info.field(0).type(), google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED);
    google::protobuf::Duration delay;
    ASSERT_TRUE(delay.ParseFromString(retry_info.field(0).length_delimited()));
    EXPECT_EQ(delay.seconds(), 1);
    EXPECT_EQ(delay.nanos(), 0);
  }
  const std::string wire = ValidTraces(2).SerializeAsString();
  HttpResult r = Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", wire);
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.retry_after, "1");
  EXPECT_EQ(r.content_type, "application/x-protobuf");
  EXPECT_EQ(r.body, StatusProto(14, "the agent's export queues are full; retry later"));
  HttpResult j = Post(receiver_->http_port(), "/v1/traces", "application/json", "{}");
  EXPECT_EQ(j.status, 503u);
  EXPECT_NE(j.body.find(R"("code":14)"), std::string::npos) << j.body;
  EXPECT_EQ(SinkSpans(), 0u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).throttled_requests.load(), 1u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).throttled_requests.load(), 2u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).items.load(), 0u);
  // Logs have their own sink, which is not saturated.
  HttpResult logs = Post(receiver_->http_port(), "/v1/logs", "application/json", "{}");
  EXPECT_EQ(logs.status, 200u);
  // Room again: the same request is taken.
  traces_.saturated = false;
  grpc::ClientContext ctx;
  otlp_collector_trace::ExportTraceServiceResponse resp;
  EXPECT_TRUE(stub->Export(&ctx, ValidTraces(2), &resp).ok());
  EXPECT_EQ(SinkSpans(), 2u);
}

// A request that finds the sink saturated waits for room: when the queues drain within the
// wait, it is taken, not refused, on both transports.
TEST_F(ReceiverTest, SaturatedSinkThatDrainsWithinTheWaitTakesTheRequest) {
  saturated_wait_ = std::chrono::seconds(5);
  StartReceiver();
  traces_.saturated = true;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  auto grpc_call = std::async(std::launch::async, [&] { return ExportTraces(2); });
  auto http_call = std::async(std::launch::async, [&] {
    return Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf",
                ValidTraces(3).SerializeAsString());
  });
  UntilWaiting(Transport::kGrpc, 1);
  UntilWaiting(Transport::kHttp, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(SinkSpans(), 0u);  // both still waiting
  const Clock::time_point drained = Clock::now();
  traces_.saturated = false;
  grpc::Status st = grpc_call.get();
  HttpResult r = http_call.get();
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(200));
  // Resumed by the drain, not by the end of the 5 s wait.
  EXPECT_LT(Clock::now() - drained, std::chrono::seconds(3));
  EXPECT_EQ(SinkSpans(), 5u);
  ExpectWaitCounts(/*throttled=*/0, /*waited=*/1);
}

// Room for one request resumes one waiting call, not every waiting call only for all but one
// to find the sink saturated again and be refused.
TEST_F(ReceiverTest, WaitingCallsTakeTheRoomOneAtATime) {
  saturated_wait_ = std::chrono::seconds(20);
  StartReceiver();
  traces_.room = 0;
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 3; ++i)
    calls.push_back(std::async(std::launch::async, [this] { return ExportTraces(1); }));
  UntilWaiting(Transport::kGrpc, 3);
  traces_.room = 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(SinkSpans(), 1u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).throttled_requests.load(), 0u);
  traces_.room = 2;
  for (auto& c : calls) {
    grpc::Status st = c.get();
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  EXPECT_EQ(SinkSpans(), 3u);
  EXPECT_EQ(C(Transport::kGrpc, Signal::kTraces).throttled_requests.load(), 0u);
}

// An OTLP/HTTP request is resumed by the waiter's thread and goes on on its own: when the room
// the waiter saw is gone by then (taken by a request resumed just before it), it waits again
// instead of being refused, and is counted once as a request that waited.
TEST_F(ReceiverTest, HttpRequestResumedIntoRoomAlreadyGoneWaitsAgain) {
  saturated_wait_ = std::chrono::seconds(20);
  StartReceiver();
  traces_.saturated = true;
  auto post = std::async(std::launch::async, [this] {
    return Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf",
                ValidTraces(2).SerializeAsString());
  });
  UntilWaiting(Transport::kHttp, 1);
  traces_.fleeting_room = 1;  // the waiter sees room; the request, looking next, does not
  for (int i = 0; i < 500 && traces_.fleeting_room.load() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(traces_.fleeting_room.load(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(post.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).throttled_requests.load(), 0u);
  traces_.saturated = false;
  HttpResult r = post.get();
  EXPECT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(SinkSpans(), 2u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).throttled_requests.load(), 0u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).waited_requests.load(), 1u);
}

// At most kMaxWaiting (16) requests per transport wait; the next one is refused at once, and
// the waiting ones are all taken when room comes.
TEST_F(ReceiverTest, OnlySixteenRequestsPerTransportWaitForRoom) {
  saturated_wait_ = std::chrono::seconds(20);
  StartReceiver();
  traces_.saturated = true;
  constexpr int kWaiting = 16;
  std::vector<std::future<grpc::Status>> grpc_calls;
  std::vector<std::future<HttpResult>> http_calls;
  auto grpc_export = [this] { return ExportTraces(1); };
  auto http_post = [this] {
    return Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf",
                ValidTraces(1).SerializeAsString());
  };
  for (int i = 0; i < kWaiting; ++i) {
    grpc_calls.push_back(std::async(std::launch::async, grpc_export));
    http_calls.push_back(std::async(std::launch::async, http_post));
  }
  // All sixteen wait (counted when they start to), however slowly their threads started.
  UntilWaiting(Transport::kGrpc, kWaiting);
  UntilWaiting(Transport::kHttp, kWaiting);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  grpc::Status refused = grpc_export();
  HttpResult refused_http = http_post();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));  // not after the 20 s wait
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refused_http.status, 503u);
  EXPECT_EQ(SinkSpans(), 0u);
  traces_.saturated = false;
  for (auto& c : grpc_calls) {
    grpc::Status st = c.get();
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  for (auto& c : http_calls) EXPECT_EQ(c.get().status, 200u);
  EXPECT_EQ(SinkSpans(), 2u * kWaiting);
  ExpectWaitCounts(/*throttled=*/1, /*waited=*/kWaiting);  // the seventeenth did not wait
}

// A gRPC call whose deadline comes while it waits (less the time to answer) is answered then
// and not taken when room comes later: the sender will send those spans again. (Checking only
// for cancellation raced: the sender could see its deadline pass before the agent did.)
TEST_F(ReceiverTest, CallsCancelledWhileWaitingAreNotTaken) {
  saturated_wait_ = std::chrono::seconds(5);
  StartReceiver();
  traces_.saturated = true;
  EXPECT_EQ(ExportTraces(2, std::chrono::milliseconds(200)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  traces_.saturated = false;
  // A later call is taken, and only its spans reach the sink.
  EXPECT_TRUE(ExportTraces(1).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(SinkSpans(), 1u);
}

// Stopping the receiver answers a waiting gRPC call at once ("retry later": the sink is still
// saturated) instead of holding the shutdown for the rest of the wait.
TEST_F(ReceiverTest, StopAnswersCallsWaitingForRoom) {
  saturated_wait_ = std::chrono::seconds(30);
  StartReceiver();
  traces_.saturated = true;
  auto call = std::async(std::launch::async, [this] { return ExportTraces(1); });
  UntilWaiting(Transport::kGrpc, 1);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  receiver_->Stop();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(call.get().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(SinkSpans(), 0u);
}

// A refusal reads the body into a scratch buffer and throws it away: the connection stays
// usable, the next request on it is parsed from the right place, and nothing refused
// reaches the sink.
TEST_F(ReceiverTest, HttpRefusedBodiesAreSkippedAndTheConnectionKept) {
  StartReceiver(true, 4u << 20);
  traces_.saturated = true;
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  beast::flat_buffer buf;
  auto send = [&](const std::string& body, bool chunked) {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/traces", 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.set(bhttp::field::content_type, "application/x-protobuf");
    req.body() = body;
    if (chunked) {
      req.chunked(true);
    } else {
      req.prepare_payload();
    }
    stream.expires_after(std::chrono::seconds(10));
    bhttp::write(stream, req);
    bhttp::response<bhttp::string_body> res;
    bhttp::read(stream, buf, res);
    return res;
  };
  // Bodies larger than the scratch buffer; their bytes would not parse as a request.
  const std::string junk(200'000, 'j');
  auto r1 = send(junk, false);
  EXPECT_EQ(r1.result_int(), 503u);
  EXPECT_TRUE(r1.keep_alive());
  EXPECT_EQ(r1[bhttp::field::retry_after], "1");
  auto r2 = send(junk, true);
  EXPECT_EQ(r2.result_int(), 503u);
  EXPECT_TRUE(r2.keep_alive());
  traces_.saturated = false;
  auto r3 = send(ValidTraces(3).SerializeAsString(), false);
  EXPECT_EQ(r3.result_int(), 200u) << r3.body();
  EXPECT_EQ(SinkSpans(), 3u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).throttled_requests.load(), 2u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 0u);
}

// Refused requests written back to back: a discarded body of known length must leave the
// bytes after it (the next request, here already read with it) in the connection's buffer.
TEST_F(ReceiverTest, HttpRefusedPipelinedBodiesLeaveTheNextRequestWhole) {
  StartReceiver(true, 4u << 20);
  traces_.saturated = true;
  std::string wire;
  for (std::size_t size : {std::size_t{200'000}, std::size_t{100}, std::size_t{70'000}})
    wire += testing::PostBytes("/v1/traces", "application/x-protobuf", std::string(size, 'j'),
                               /*chunked=*/false);
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  stream.expires_after(std::chrono::seconds(10));
  asio::write(stream.socket(), asio::buffer(wire));
  beast::flat_buffer buf;
  for (int i = 0; i < 3; ++i) {
    bhttp::response<bhttp::string_body> res;
    boost::system::error_code ec;
    bhttp::read(stream, buf, res, ec);
    ASSERT_FALSE(ec) << "response " << i << ": " << ec.message();
    EXPECT_EQ(res.result_int(), 503u) << "response " << i;
    EXPECT_TRUE(res.keep_alive()) << "response " << i;
  }
  traces_.saturated = false;
  asio::write(stream.socket(),
              asio::buffer(testing::PostBytes("/v1/traces", "application/x-protobuf",
                                              ValidTraces(2).SerializeAsString(), false)));
  bhttp::response<bhttp::string_body> ok;
  bhttp::read(stream, buf, ok);
  EXPECT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(SinkSpans(), 2u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).throttled_requests.load(), 3u);
}

// A client that waits for 100 Continue is refused at once and sends no body.
TEST_F(ReceiverTest, HttpRefusalAnswersExpectContinueWithoutTheBody) {
  StartReceiver();
  traces_.saturated = true;
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  const std::string header =
      "POST /v1/traces HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-protobuf\r\n"
      "Content-Length: 50000\r\nExpect: 100-continue\r\n\r\n";
  asio::write(stream.socket(), asio::buffer(header));
  beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  stream.expires_after(std::chrono::seconds(10));
  bhttp::read(stream, buf, res);
  EXPECT_EQ(res.result_int(), 503u);
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(SinkSpans(), 0u);
}

TEST_F(ReceiverTest, HttpProtobufTraces) {
  StartReceiver();
  TracesRequest req = ValidTraces(2);
  HttpResult r =
      Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", req.SerializeAsString());
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/x-protobuf");
  EXPECT_TRUE(r.body.empty());
  ASSERT_EQ(traces_.got().size(), 1u);
  EXPECT_EQ(traces_.got()[0].SerializeAsString(), req.SerializeAsString());
  EXPECT_EQ(traces_.on_arena.load(), 1);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).items.load(), 2u);
}

TEST_F(ReceiverTest, HttpJsonTraces) {
  StartReceiver();
  TracesRequest req = ValidTraces(1);
  HttpResult r = Post(receiver_->http_port(), "/v1/traces", "application/json; charset=utf-8",
                      otlp_json::Encode(req));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, "{}");
  ASSERT_EQ(traces_.got().size(), 1u);
  EXPECT_EQ(traces_.got()[0].SerializeAsString(), req.SerializeAsString());
  EXPECT_EQ(traces_.on_arena.load(), 1);
}

TEST_F(ReceiverTest, HttpGzipProtobufAndJson) {
  StartReceiver();
  std::string gz;
  ASSERT_TRUE(otlp::GzipCompress(ValidTraces(2).SerializeAsString(), &gz));
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", gz, "gzip").status,
            200u);
  ASSERT_TRUE(otlp::GzipCompress(otlp_json::Encode(ValidTraces(1)), &gz));
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/traces", "application/json", gz, "gzip").status,
            200u);
  EXPECT_EQ(SinkSpans(), 3u);
}

TEST_F(ReceiverTest, HttpGzipBombIs413AndCorruptGzipIs400) {
  StartReceiver(true, 64 * 1024);
  std::string gz;
  // 1 MiB of zeros wrapped in a valid span: compresses to ~1 KiB, inflates past the bound.
  TracesRequest req = ValidTraces(1);
  req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_name(
      std::string(1 << 20, '\0'));
  ASSERT_TRUE(otlp::GzipCompress(req.SerializeAsString(), &gz));
  ASSERT_LT(gz.size(), 64u * 1024);
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", gz, "gzip").status,
            413u);
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", "not gzip", "gzip")
                .status,
            400u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 2u);
  EXPECT_TRUE(traces_.got().empty());
}

TEST_F(ReceiverTest, HttpMalformedProtobufIs400WithStatusBody) {
  StartReceiver();
  HttpResult r = Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf",
                      "\x0a\x05"
                      "ab");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.content_type, "application/x-protobuf");
  // google.rpc.Status: field 1 code = 3 (INVALID_ARGUMENT), field 2 the message.
  ASSERT_GE(r.body.size(), 2u);
  EXPECT_EQ(r.body.substr(0, 2), std::string("\x08\x03"));
  EXPECT_NE(r.body.find("cannot decode ExportTraceServiceRequest"), std::string::npos);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 1u);
  EXPECT_TRUE(traces_.got().empty());
}

TEST_F(ReceiverTest, HttpMalformedJsonIs400WithJsonStatus) {
  StartReceiver();
  HttpResult r =
      Post(receiver_->http_port(), "/v1/logs", "application/json", "{\"resourceLogs\":[");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body.rfind("{\"code\":3,\"message\":\"cannot decode OTLP/JSON", 0), 0u) << r.body;
  EXPECT_EQ(C(Transport::kHttp, Signal::kLogs).malformed_requests.load(), 1u);
}

TEST_F(ReceiverTest, HttpWrongContentTypeIs415) {
  StartReceiver();
  HttpResult r = Post(receiver_->http_port(), "/v1/traces", "text/plain", "hello");
  EXPECT_EQ(r.status, 415u);
  r = Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf",
           ValidTraces(1).SerializeAsString(), "br");
  EXPECT_EQ(r.status, 415u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 2u);
  EXPECT_TRUE(traces_.got().empty());
}

TEST_F(ReceiverTest, HttpOversizedBodyIs413) {
  StartReceiver(true, 4096);
  TracesRequest req = ValidTraces(1);
  req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_name(
      std::string(10000, 'x'));
  HttpResult r =
      Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", req.SerializeAsString());
  EXPECT_EQ(r.status, 413u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 1u);
  EXPECT_TRUE(traces_.got().empty());
}

TEST_F(ReceiverTest, HttpOversizedChunkedBodyIs413) {
  StartReceiver(true, 4096);
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/traces", 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, "application/x-protobuf");
  req.body() = std::string(10000, 'x');
  req.chunked(true);  // no Content-Length: the limit applies while the body is read
  bhttp::write(stream, req);
  beast::flat_buffer buf;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(stream, buf, res);
  EXPECT_EQ(res.result_int(), 413u);
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 1u);
}

TEST_F(ReceiverTest, HttpExpectContinueIsHonoured) {
  StartReceiver();
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/traces", 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, "application/x-protobuf");
  req.set(bhttp::field::expect, "100-continue");
  req.body() = ValidTraces(1).SerializeAsString();
  req.prepare_payload();
  bhttp::request_serializer<bhttp::string_body> sr(req);
  bhttp::write_header(stream, sr);
  beast::flat_buffer buf;
  {
    bhttp::response<bhttp::empty_body> interim;
    bhttp::read(stream, buf, interim);
    ASSERT_EQ(interim.result_int(), 100u);
  }
  bhttp::write(stream, sr);
  bhttp::response<bhttp::string_body> res;
  bhttp::read(stream, buf, res);
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(SinkSpans(), 1u);
}

TEST_F(ReceiverTest, HttpUnknownPathIs404AndWrongMethodIs405) {
  StartReceiver();
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/spans", "application/json", "{}").status, 404u);
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/traces", "", "", "", bhttp::verb::get).status, 405u);
}

TEST_F(ReceiverTest, HttpJsonPartialSuccess) {
  StartReceiver();
  TracesRequest req = Traces({{Id(16, 'a'), Id(8, 'b')}, {Id(16, 'c'), std::string(8, '\0')}});
  HttpResult r =
      Post(receiver_->http_port(), "/v1/traces", "application/json", otlp_json::Encode(req));
  EXPECT_EQ(r.status, 200u);
  otlp::PartialSuccess ps;
  ASSERT_TRUE(otlp::ParsePartialSuccessJson(r.body, &ps)) << r.body;
  EXPECT_EQ(ps.rejected, 1);
  EXPECT_NE(ps.error_message.find("span_id is all zero"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"rejectedSpans\""), std::string::npos) << r.body;
  EXPECT_EQ(SinkSpans(), 1u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).refused_items.load(), 1u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).items.load(), 1u);
}

TEST_F(ReceiverTest, HttpProtobufPartialSuccess) {
  StartReceiver();
  TracesRequest req = Traces({{Id(16, 'a'), Id(8, 'b')}, {Id(16, 'c'), Id(3, 'd')}});
  HttpResult r =
      Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf", req.SerializeAsString());
  EXPECT_EQ(r.status, 200u);
  otlp::PartialSuccess ps;
  ASSERT_TRUE(otlp::ParsePartialSuccessProto(r.body, &ps));
  EXPECT_EQ(ps.rejected, 1);
  EXPECT_EQ(SinkSpans(), 1u);
}

// The real vLLM 0.29.0 sample was sanitized without traceId/spanId. The OTLP/JSON decoder leaves
// the ids empty; an empty trace_id is invalid, so the span is refused, visibly: 400 with the
// reason, and counted.
TEST_F(ReceiverTest, HttpVllmSampleWithoutIdsIsRefusedAndCounted) {
  StartReceiver();
  const std::string body =
      ReadFile(std::string(INFERTEL_FIXTURES_DIR) + "/vllm-llm_request-otlp-0.29.0-SANITIZED.json");
  ASSERT_FALSE(body.empty());
  TracesRequest decoded;
  std::string err;
  ASSERT_TRUE(otlp_json::DecodeTraces(body, &decoded, &err)) << err;
  ASSERT_EQ(CountSpans(decoded), 1u);
  EXPECT_TRUE(decoded.resource_spans(0).scope_spans(0).spans(0).trace_id().empty());

  HttpResult r = Post(receiver_->http_port(), "/v1/traces", "application/json", body);
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_NE(r.body.find("span 'llm_request': trace_id is empty"), std::string::npos) << r.body;
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).refused_items.load(), 1u);
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 0u);
  EXPECT_TRUE(traces_.got().empty());

  // The same sample with ids added passes through unchanged.
  auto* span = decoded.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  span->set_trace_id(Id(16, 'q'));
  span->set_span_id(Id(8, 'r'));
  r = Post(receiver_->http_port(), "/v1/traces", "application/json", otlp_json::Encode(decoded));
  EXPECT_EQ(r.status, 200u);
  ASSERT_EQ(traces_.got().size(), 1u);
  EXPECT_EQ(traces_.got()[0].SerializeAsString(), decoded.SerializeAsString());
}

TEST_F(ReceiverTest, HttpLogsAndMetricsJsonReachTheirSinks) {
  StartReceiver();
  EXPECT_EQ(Post(receiver_->http_port(), "/v1/logs", "application/json", otlp_json::Encode(Logs(2)))
                .status,
            200u);
  EXPECT_EQ(
      Post(receiver_->http_port(), "/v1/metrics", "application/json", otlp_json::Encode(Metrics(3)))
          .status,
      200u);
  ASSERT_EQ(logs_.got().size(), 1u);
  EXPECT_EQ(logs_.got()[0].SerializeAsString(), Logs(2).SerializeAsString());
  ASSERT_EQ(metrics_.got().size(), 1u);
  EXPECT_EQ(metrics_.got()[0].SerializeAsString(), Metrics(3).SerializeAsString());
}

TEST_F(ReceiverTest, HttpInvalidLogIdIsPartialSuccess) {
  StartReceiver();
  LogsRequest req = Logs(2);
  req.mutable_resource_logs(0)->mutable_scope_logs(0)->mutable_log_records(1)->set_trace_id("xyz");
  HttpResult r =
      Post(receiver_->http_port(), "/v1/logs", "application/json", otlp_json::Encode(req));
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find("\"rejectedLogRecords\":\"1\""), std::string::npos) << r.body;
  EXPECT_EQ(CountItems(logs_.got().at(0)), 1u);
}

TEST_F(ReceiverTest, HttpKeepAliveServesSeveralRequests) {
  StartReceiver();
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  beast::flat_buffer buf;
  for (int i = 0; i < 3; ++i) {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/v1/traces", 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.set(bhttp::field::content_type, "application/x-protobuf");
    req.body() = ValidTraces(1).SerializeAsString();
    req.prepare_payload();
    bhttp::write(stream, req);
    bhttp::response<bhttp::string_body> res;
    bhttp::read(stream, buf, res);
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_TRUE(res.keep_alive());
  }
  EXPECT_EQ(traces_.got().size(), 3u);
}

// Bodies far larger than the connection's idle buffer, pipelined in one write, and a chunked
// one behind them: each arrives whole and in order, whatever is read ahead of a request is
// kept for the next (the receiver reserves room for a body and gives it back afterwards).
TEST_F(ReceiverTest, HttpLargePipelinedBodiesArriveWhole) {
  StartReceiver(true, 4u << 20);
  auto big = [](int spans, char fill) {
    TracesRequest r;
    auto* ss = r.add_resource_spans()->add_scope_spans();
    for (int i = 0; i < spans; ++i) {
      auto* span = ss->add_spans();
      span->set_name("s" + std::to_string(i));
      std::string trace(16, fill), id(8, fill);
      std::memcpy(trace.data(), &i, sizeof i);
      std::memcpy(id.data(), &i, sizeof i);
      span->set_trace_id(trace);
      span->set_span_id(id);
      auto* kv = span->add_attributes();
      kv->set_key("pad");
      kv->mutable_value()->set_string_value(std::string(1500, fill));
    }
    return r;
  };
  const int kSpans[] = {200, 3, 150};
  std::string wire;
  for (int i = 0; i < 3; ++i) {
    wire +=
        testing::PostBytes("/v1/traces", "application/x-protobuf",
                           big(kSpans[i], static_cast<char>('a' + i)).SerializeAsString(), i == 2);
  }
  ASSERT_GT(wire.size(), 500'000u);
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), receiver_->http_port()));
  std::thread writer([&] {
    boost::system::error_code ec;  // the socket may be closed under it on failure
    asio::write(stream.socket(), asio::buffer(wire), ec);
  });
  beast::flat_buffer buf;
  boost::system::error_code ec;
  for (int i = 0; i < 3 && !ec; ++i) {
    bhttp::response<bhttp::string_body> res;
    stream.expires_after(std::chrono::seconds(10));  // a lost request fails, not hangs
    bhttp::read(stream, buf, res, ec);
    EXPECT_FALSE(ec) << "response " << i << ": " << ec.message();
    if (!ec) {
      EXPECT_EQ(res.result_int(), 200u) << "request " << i << ": " << res.body();
    }
  }
  if (ec) stream.socket().shutdown(tcp::socket::shutdown_both, ec);  // unblocks the writer
  writer.join();
  const std::vector<TracesRequest> got = traces_.got();
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& spans = got[i].resource_spans(0).scope_spans(0).spans();
    ASSERT_EQ(spans.size(), kSpans[i]);
    EXPECT_EQ(spans[kSpans[i] - 1].attributes(0).value().string_value(),
              std::string(1500, static_cast<char>('a' + i)));
  }
  EXPECT_EQ(C(Transport::kHttp, Signal::kTraces).malformed_requests.load(), 0u);
}

TEST_F(ReceiverTest, StatsAreRegisteredWithTransportAndSignalLabels) {
  StartReceiver();
  Post(receiver_->http_port(), "/v1/traces", "application/x-protobuf",
       ValidTraces(2).SerializeAsString());
  StatsRegistry registry;
  receiver_->RegisterStats(&registry);
  const std::string text = registry.Render();
  EXPECT_NE(text.find("infertel_receiver_requests_total{transport=\"http\",signal=\"traces\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("infertel_receiver_items_total{transport=\"http\",signal=\"traces\"} 2"),
            std::string::npos);
  EXPECT_NE(
      text.find("infertel_receiver_refused_items_total{transport=\"grpc\",signal=\"logs\"} 0"),
      std::string::npos);
  EXPECT_NE(
      text.find(
          "infertel_receiver_malformed_requests_total{transport=\"grpc\",signal=\"metrics\"}"),
      std::string::npos);
  EXPECT_NE(
      text.find(
          "infertel_receiver_throttled_requests_total{transport=\"http\",signal=\"traces\"} 0"),
      std::string::npos);
  EXPECT_NE(
      text.find("infertel_receiver_waited_requests_total{transport=\"grpc\",signal=\"logs\"} 0"),
      std::string::npos);
}

TEST(OtlpReceiverStart, BusyPortAndBadAddressFail) {
  RecordingSink<TracesRequest> sink;
  OtlpReceiverOptions o;
  o.grpc_address = "";
  o.http_address = "127.0.0.1:0";
  OtlpReceiver first(o, {&sink});
  std::string error;
  ASSERT_TRUE(first.Start(&error)) << error;
  EXPECT_EQ(first.grpc_port(), 0);
  o.http_address = "127.0.0.1:" + std::to_string(first.http_port());
  OtlpReceiver second(o, {&sink});
  EXPECT_FALSE(second.Start(&error));
  EXPECT_NE(error.find(o.http_address), std::string::npos) << error;
  o.http_address = "nonsense";
  OtlpReceiver third(o, {&sink});
  EXPECT_FALSE(third.Start(&error));
}

// ---------- validation ----------

TEST(RemoveInvalid, KeepsOrderAndPrunesContainersEmptiedByRemoval) {
  TracesRequest r;
  auto* rs0 = r.add_resource_spans();
  auto* bad_scope = rs0->add_scope_spans();
  bad_scope->add_spans()->set_name("bad");  // no ids
  auto* ok_scope = rs0->add_scope_spans();
  for (const char* n : {"a", "x", "b"}) {
    auto* s = ok_scope->add_spans();
    s->set_name(n);
    s->set_trace_id(Id(16, 't'));
    s->set_span_id(Id(8, 's'));
    if (std::string(n) == "x") s->set_parent_span_id(Id(4, 'p'));
  }
  r.add_resource_spans()->add_scope_spans();  // originally empty: left as sent
  auto* rs2 = r.add_resource_spans();
  rs2->add_scope_spans()->add_spans()->set_name("bad2");
  std::string first;
  EXPECT_EQ(RemoveInvalid(&r, &first), 3);
  EXPECT_EQ(first, "span 'bad': trace_id is empty (missing), want 16 bytes");
  ASSERT_EQ(r.resource_spans_size(), 2);
  ASSERT_EQ(r.resource_spans(0).scope_spans_size(), 1);
  const auto& spans = r.resource_spans(0).scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 2);
  EXPECT_EQ(spans[0].name(), "a");
  EXPECT_EQ(spans[1].name(), "b");
  EXPECT_EQ(r.resource_spans(1).scope_spans_size(), 1);
}

}  // namespace
}  // namespace infertel::receiver
