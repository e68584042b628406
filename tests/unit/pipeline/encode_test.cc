#include "pipeline/encode.h"
#include "pipeline/held.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_name.h"
#include "pipeline/batch_processor.h"

#include "core/semconv.h"

namespace infertel::pipeline {
namespace {

// Two resources (one with a schema URL), scopes with and without a scope header and schema
// URL, spans with attributes, events and links: every branch of the encoder.
TracesRequest RichTraces() {
  TracesRequest req;
  for (int r = 0; r < 2; ++r) {
    auto* rs = req.add_resource_spans();
    AddAttr(rs->mutable_resource()->mutable_attributes(), semconv::kServiceName,
            "svc-" + std::to_string(r));
    if (r == 1) rs->set_schema_url("https://opentelemetry.io/schemas/1.27.0");
    for (int s = 0; s < 3; ++s) {
      auto* ss = rs->add_scope_spans();
      if (s != 1) ss->mutable_scope()->set_name("scope-" + std::to_string(s));
      if (s == 2) ss->set_schema_url("https://opentelemetry.io/schemas/1.26.0");
      for (int i = 0; i < 4; ++i) {
        auto* span = ss->add_spans();
        span->set_name("span-" + std::to_string(i));
        span->set_trace_id(std::string(16, static_cast<char>('a' + i)));
        span->set_span_id(std::string(8, static_cast<char>('b' + i)));
        span->set_start_time_unix_nano(1000u + i);
        span->set_end_time_unix_nano(2000u + i);
        AddAttr(span->mutable_attributes(), "gen_ai.request.id", "req-" + std::to_string(i));
        AddAttr(span->mutable_attributes(), "gen_ai.usage.output_tokens",
                static_cast<std::int64_t>(300 * i));  // a multi-byte varint
        span->add_events()->set_name("event");
        span->add_links()->set_trace_id(std::string(16, 'z'));
      }
    }
  }
  return req;
}

TEST(EncodeTest, EqualsProtobufsSerializerWithFreshSizes) {
  TracesRequest req = RichTraces();
  req.ByteSizeLong();  // what the batch processor does at Submit
  EXPECT_EQ(Encode(req), req.SerializeAsString());
}

TEST(EncodeTest, ItemsNeverSizedAreSizedHere) {
  TracesRequest req = RichTraces();  // no ByteSizeLong: every cached size is 0
  const std::string expected = TracesRequest(req).SerializeAsString();
  EXPECT_EQ(Encode(req), expected);
}

TEST(EncodeTest, HeadersChangedAfterSizingAreSizedAgain) {
  // Batching moves spans between requests and rewrites headers (TakeItems and the merger
  // make new blocks, the merger folds them); only the items' sizes may be reused.
  TracesRequest req = RichTraces();
  req.ByteSizeLong();
  req.mutable_resource_spans(0)
      ->mutable_resource()
      ->mutable_attributes(0)
      ->mutable_value()
      ->set_string_value("a much longer service name than before");
  req.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_scope()->set_version("1.2.3");
  req.mutable_resource_spans(1)->set_schema_url("");
  Held<TracesRequest> held = Hold(std::move(req));
  std::size_t moved = 0;
  Held<TracesRequest> front = TakeItems(&held, 7, &moved);
  HeldMerger<TracesRequest> merger;
  merger.Add(front);
  merger.Add(held);
  Held<TracesRequest> batch = std::move(merger).Finish();
  EXPECT_EQ(Encode(*batch.request), TracesRequest(*batch.request).SerializeAsString());
}

TEST(EncodeTest, AppendsToWhatIsThere) {
  TracesRequest req = RichTraces();
  std::string out = "prefix";
  Encode(req, &out);
  EXPECT_EQ(out, "prefix" + req.SerializeAsString());
}

TEST(EncodeTest, UnknownFieldsInAHeaderFallBackToProtobuf) {
  TracesRequest req = RichTraces();
  req.ByteSizeLong();
  // A field a newer OTLP might add to ScopeSpans: kept and sent on, as protobuf would.
  auto* ss = req.mutable_resource_spans(1)->mutable_scope_spans(2);
  ss->GetReflection()->MutableUnknownFields(ss)->AddVarint(9, 42);
  const std::string out = Encode(req);
  EXPECT_EQ(out, req.SerializeAsString());
  TracesRequest back;
  ASSERT_TRUE(back.ParseFromString(out));
  const auto& back_ss = back.resource_spans(1).scope_spans(2);
  EXPECT_EQ(back_ss.GetReflection()->GetUnknownFields(back_ss).field_count(), 1);
}

TEST(EncodeTest, EmptyRequestAndEmptyBlocks) {
  TracesRequest req;
  EXPECT_EQ(Encode(req), "");
  req.add_resource_spans()->add_scope_spans();
  EXPECT_EQ(Encode(req), req.SerializeAsString());
}

TEST(EncodeTest, LogsAndMetricsShareTheLayout) {
  LogsRequest logs;
  auto* rl = logs.add_resource_logs();
  rl->set_schema_url("s");
  auto* sl = rl->add_scope_logs();
  sl->mutable_scope()->set_name("infertel");
  for (int i = 0; i < 3; ++i) sl->add_log_records()->mutable_body()->set_string_value("line");
  logs.ByteSizeLong();
  EXPECT_EQ(Encode(logs), logs.SerializeAsString());

  MetricsRequest metrics;
  auto* sm = metrics.add_resource_metrics()->add_scope_metrics();
  sm->set_schema_url("m");
  auto* g = sm->add_metrics();
  g->set_name("vllm:num_requests_running");
  g->mutable_gauge()->add_data_points()->set_as_double(3);
  EXPECT_EQ(Encode(metrics), metrics.SerializeAsString());
}

// An exporter that keeps what it would put on the wire.
class EncodingExporter final : public TraceExporter {
 public:
  explicit EncodingExporter(std::vector<std::string>* out, std::mutex* mu) : out_(out), mu_(mu) {}
  std::string_view Name() const noexcept override { return "encoding"; }
  ExportResult Export(const TracesRequest& r) noexcept override {
    std::string wire = Encode(r);
    std::lock_guard l(*mu_);
    out_->push_back(std::move(wire));
    return ExportResult::Ok();
  }

 private:
  std::vector<std::string>* out_;
  std::mutex* mu_;
};

TEST(EncodeTest, EveryLaneOfTheBatchProcessorEncodesWhatWasSubmitted) {
  // The last lane gets the submitted request (sized at Submit), the others a copy; batches
  // split one request and merge several. Each lane must put the same spans on the wire.
  std::mutex mu;
  std::vector<std::string> a, b;
  std::vector<std::unique_ptr<TraceExporter>> ex;
  ex.push_back(std::make_unique<EncodingExporter>(&a, &mu));
  ex.push_back(std::make_unique<EncodingExporter>(&b, &mu));
  BatchOptions o;
  o.max_batch_items = 10;  // RichTraces() holds 24 spans: split, then merged with the next
  o.max_delay = std::chrono::milliseconds(0);
  TraceBatchProcessor p(std::move(ex), o);
  p.Submit(RichTraces());
  p.Submit(RichTraces());
  ASSERT_TRUE(p.Flush(std::chrono::seconds(5)));
  auto spans = [](const std::vector<std::string>& wires) {
    std::vector<std::string> all;
    for (const auto& w : wires) {
      TracesRequest r;
      EXPECT_TRUE(r.ParseFromString(w));
      EXPECT_EQ(Encode(r), r.SerializeAsString());
      for (const auto& rs : r.resource_spans())
        for (const auto& ss : rs.scope_spans())
          for (const auto& s : ss.spans()) all.push_back(s.SerializeAsString());
    }
    return all;
  };
  std::vector<std::string> expected;
  const TracesRequest one = RichTraces();
  for (int k = 0; k < 2; ++k)
    for (const auto& rs : one.resource_spans())
      for (const auto& ss : rs.scope_spans())
        for (const auto& s : ss.spans()) expected.push_back(s.SerializeAsString());
  std::lock_guard l(mu);
  EXPECT_EQ(spans(a), expected);
  EXPECT_EQ(spans(b), expected);
}

// The names of this process's threads, as `top -H` shows them.
std::vector<std::string> ThreadNames() {
  std::vector<std::string> names;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string n;
    if (std::getline(in, n)) names.push_back(n);
  }
  closedir(d);
  return names;
}

TEST(BatchProcessorThreadsTest, EachLaneThreadIsNamedAfterItsSignalAndExporter) {
  std::mutex mu;
  std::vector<std::string> out;
  std::vector<std::unique_ptr<TraceExporter>> ex;
  ex.push_back(std::make_unique<EncodingExporter>(&out, &mu));
  TraceBatchProcessor p(std::move(ex), BatchOptions{});
  // The lane names itself when it starts: poll briefly.
  bool found = false;
  for (int i = 0; i < 200 && !found; ++i) {
    for (const auto& n : ThreadNames()) found = found || n == "traces:encoding";
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace infertel::pipeline
