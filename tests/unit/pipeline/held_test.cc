#include "pipeline/held.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/semconv.h"

namespace infertel::pipeline {
namespace {

TracesRequest HeldTestRequest(int spans, const std::string& prefix, const std::string& service,
                              const std::string& scope = "infertel") {
  TracesRequest req;
  auto* rs = req.add_resource_spans();
  AddAttr(rs->mutable_resource()->mutable_attributes(), semconv::kServiceName, service);
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name(scope);
  ss->set_schema_url("https://opentelemetry.io/schemas/1.27.0");
  for (int i = 0; i < spans; ++i) {
    Span* s = ss->add_spans();
    s->set_name(prefix + std::to_string(i));
    AddAttr(s->mutable_attributes(), "gen_ai.request.id", prefix + "-request-" + std::to_string(i));
  }
  return req;
}

std::vector<const Span*> SpanPointers(const TracesRequest& req) {
  std::vector<const Span*> out;
  for (const auto& rs : req.resource_spans())
    for (const auto& ss : rs.scope_spans())
      for (const auto& s : ss.spans()) out.push_back(&s);
  return out;
}

// A request parsed onto a fresh Memory, as the receivers decode.
Held<TracesRequest> Received(const TracesRequest& req) {
  auto h = Held<TracesRequest>::Make();
  EXPECT_TRUE(h.request->ParseFromString(req.SerializeAsString()));
  return h;
}

TEST(HeldTest, HoldViewsAHeapRequestWithoutCopyingItsItems) {
  TracesRequest heap = HeldTestRequest(3, "a", "svc");
  const std::string wire = heap.SerializeAsString();
  Held<TracesRequest> h = Hold(std::move(heap));
  ASSERT_NE(h.request->GetArena(), nullptr);
  EXPECT_EQ(h.request->GetArena(), h.memory->arena());
  EXPECT_EQ(h.request->SerializeAsString(), wire);  // schema URLs and headers included
  // The items are the heap request's own, now owned through the Memory.
  for (const Span* s : SpanPointers(*h.request)) EXPECT_EQ(s->GetArena(), nullptr);
}

TEST(HeldTest, TakeItemsMovesPointersAndBorrowsHeaders) {
  TracesRequest two = HeldTestRequest(3, "a", "svc");
  *two.add_resource_spans() = HeldTestRequest(2, "b", "other", "scope-b").resource_spans(0);
  Held<TracesRequest> src = Received(two);
  const std::vector<const Span*> before = SpanPointers(*src.request);
  ASSERT_EQ(before.size(), 5u);

  std::size_t moved = 0;
  Held<TracesRequest> front = TakeItems(&src, 4, &moved);
  EXPECT_EQ(moved, 4u);
  const std::vector<const Span*> taken = SpanPointers(*front.request);
  const std::vector<const Span*> left = SpanPointers(*src.request);
  ASSERT_EQ(taken.size(), 4u);
  ASSERT_EQ(left.size(), 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(taken[static_cast<std::size_t>(i)], before[i]);
  EXPECT_EQ(left[0], before[4]);
  // The wire bytes of the two halves, built by hand from the original.
  TracesRequest want_front = two, want_rest = two;
  auto* cut = want_front.mutable_resource_spans(1)->mutable_scope_spans(0)->mutable_spans();
  cut->DeleteSubrange(1, 1);
  want_rest.mutable_resource_spans()->DeleteSubrange(0, 1);
  want_rest.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans()->DeleteSubrange(0,
                                                                                               1);
  EXPECT_EQ(front.request->SerializeAsString(), want_front.SerializeAsString());
  EXPECT_EQ(src.request->SerializeAsString(), want_rest.SerializeAsString());
  // Headers are borrowed, not copied: the second block was cut, and both halves share its
  // resource and scope.
  ASSERT_EQ(front.request->resource_spans_size(), 2);
  EXPECT_EQ(&front.request->resource_spans(1).resource(),
            &src.request->resource_spans(0).resource());
  EXPECT_EQ(&front.request->resource_spans(1).scope_spans(0).scope(),
            &src.request->resource_spans(0).scope_spans(0).scope());
}

TEST(HeldTest, MergerFoldsLikeTheHeapMergerAndKeepsItsParts) {
  std::vector<TracesRequest> parts = {
      HeldTestRequest(2, "a", "svc"), HeldTestRequest(1, "b", "other"),
      HeldTestRequest(3, "c", "svc"), HeldTestRequest(1, "d", "svc", "other-scope")};
  // What folding makes of them, by hand: "svc" holds a, c under "infertel" and d under
  // "other-scope"; "other" holds b.
  TracesRequest heap = parts[0];
  auto* svc_spans = heap.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
  for (const auto& sp : parts[2].resource_spans(0).scope_spans(0).spans()) *svc_spans->Add() = sp;
  *heap.mutable_resource_spans(0)->add_scope_spans() = parts[3].resource_spans(0).scope_spans(0);
  *heap.add_resource_spans() = parts[1].resource_spans(0);
  std::vector<Held<TracesRequest>> held;
  std::vector<const Span*> items;
  for (const auto& p : parts) {
    held.push_back(Received(p));
    for (const Span* s : SpanPointers(*held.back().request)) items.push_back(s);
  }
  std::weak_ptr<Memory> first = held.front().memory;
  HeldMerger<TracesRequest> merger;
  for (const auto& h : held) merger.Add(h);
  Held<TracesRequest> batch = std::move(merger).Finish();
  EXPECT_EQ(batch.request->SerializeAsString(), heap.SerializeAsString());
  ASSERT_EQ(batch.request->resource_spans_size(), 2);  // "svc" folded, "other" apart
  EXPECT_EQ(batch.request->resource_spans(0).scope_spans_size(), 2);
  // Linked, in order of arrival within each folded block: a before c.
  const std::vector<const Span*> linked = SpanPointers(*batch.request);
  EXPECT_EQ(linked[0], items[0]);
  EXPECT_EQ(linked[2], items[3]);

  // The batch alone keeps every part's memory alive, and lets it go with itself.
  held.clear();
  ASSERT_FALSE(first.expired());
  EXPECT_EQ(batch.request->SerializeAsString(), heap.SerializeAsString());
  batch = {};
  EXPECT_TRUE(first.expired());
}

// Views that borrow the very same resource and scope objects (as the gateway's entry spans
// do) fold by identity; the schema URL still tells blocks apart.
TEST(HeldTest, MergerFoldsRequestsSharingOneHeaderObject) {
  auto header = Received(HeldTestRequest(0, "h", "svc"));
  const auto& header_rs = header.request->resource_spans(0);
  auto view = [&](const std::string& name, const std::string& scope_schema) {
    auto h = Held<TracesRequest>::Make();
    h.memory->Keep(header.memory);
    auto* rs = AddBorrowed(h.request->mutable_resource_spans(), header_rs);
    auto* ss = AddBorrowed(rs->mutable_scope_spans(), header_rs.scope_spans(0));
    ss->set_schema_url(scope_schema);
    ss->add_spans()->set_name(name);
    return h;
  };
  const std::string schema = header_rs.scope_spans(0).schema_url();
  std::vector<Held<TracesRequest>> parts = {view("a", schema), view("b", schema),
                                            view("c", "https://example.com/other-schema"),
                                            view("d", schema)};
  HeldMerger<TracesRequest> merger;
  for (const auto& p : parts) merger.Add(p);
  Held<TracesRequest> batch = std::move(merger).Finish();
  ASSERT_EQ(batch.request->resource_spans_size(), 1);
  const auto& rs = batch.request->resource_spans(0);
  EXPECT_EQ(&rs.resource(), &header_rs.resource());  // borrowed, not copied
  ASSERT_EQ(rs.scope_spans_size(), 2);
  ASSERT_EQ(rs.scope_spans(0).spans_size(), 3);
  EXPECT_EQ(rs.scope_spans(0).spans(0).name(), "a");
  EXPECT_EQ(rs.scope_spans(0).spans(1).name(), "b");
  EXPECT_EQ(rs.scope_spans(0).spans(2).name(), "d");
  EXPECT_EQ(rs.scope_spans(1).spans(0).name(), "c");
  EXPECT_EQ(rs.scope_spans(1).schema_url(), "https://example.com/other-schema");
}

TEST(HeldTest, ASplitPieceKeepsItsSourceAlive) {
  Held<TracesRequest> src = Received(HeldTestRequest(4, "a", "svc"));
  std::weak_ptr<Memory> source = src.memory;
  std::size_t moved = 0;
  Held<TracesRequest> piece = TakeItems(&src, 2, &moved);
  const std::string expected = piece.request->SerializeAsString();
  src = {};
  ASSERT_FALSE(source.expired());
  EXPECT_EQ(piece.request->SerializeAsString(), expected);
  piece = {};
  EXPECT_TRUE(source.expired());
}

// A batch's parts can be let go of a few at a time (a paced lane frees a batch in steps).
TEST(HeldTest, ReleaseKeptLetsGoOfPartsAFewAtATime) {
  HeldMerger<TracesRequest> merger;
  std::vector<std::weak_ptr<Memory>> parts;
  for (int i = 0; i < 5; ++i) {
    Held<TracesRequest> part = Received(HeldTestRequest(1, "p" + std::to_string(i), "svc"));
    parts.push_back(part.memory);
    merger.Add(part);
  }
  Held<TracesRequest> batch = std::move(merger).Finish();
  auto alive = [&] {
    int n = 0;
    for (const auto& p : parts) n += p.expired() ? 0 : 1;
    return n;
  };
  ASSERT_EQ(alive(), 5);
  // The first part is kept apart from the others (Memory::Keep); the last ones go first.
  EXPECT_EQ(batch.memory->ReleaseKept(2), 2u);
  EXPECT_EQ(alive(), 3);
  EXPECT_TRUE(parts[4].expired());
  EXPECT_TRUE(parts[3].expired());
  EXPECT_EQ(batch.memory->ReleaseKept(32), 0u);
  EXPECT_EQ(alive(), 1);
  batch = {};
  EXPECT_EQ(alive(), 0);
}

TEST(HeldTest, UnlinkLeavesTheElementsToTheirOwner) {
  Held<TracesRequest> h = Received(HeldTestRequest(3, "a", "svc"));
  auto* spans = h.request->mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
  Span* kept = spans->Mutable(1);
  Unlink(spans, 1, 2);
  EXPECT_EQ(spans->size(), 1);
  // Still whole (on the arena), and not handed out again by the field.
  EXPECT_EQ(kept->name(), "a1");
  Span* added = spans->Add();
  EXPECT_NE(added, kept);
  EXPECT_TRUE(added->name().empty());
}

TEST(HeldTest, AMemoryKeepsEveryOtherOnceAndUntilItDies) {
  auto a = std::make_shared<Memory>();
  auto b = std::make_shared<Memory>();
  auto c = std::make_shared<Memory>();
  std::weak_ptr<Memory> wa = a, wb = b, wc = c;
  auto keeper = std::make_shared<Memory>();
  keeper->Keep(a);
  keeper->Keep(a);  // consecutive parts of one source: kept once
  keeper->Keep(b);
  keeper->Keep(b);
  keeper->Keep(c);
  keeper->Keep(nullptr);
  keeper->Keep(keeper);  // itself: not kept (it would never die)
  EXPECT_EQ(a.use_count(), 2);
  EXPECT_EQ(b.use_count(), 2);
  EXPECT_EQ(c.use_count(), 2);
  EXPECT_EQ(keeper.use_count(), 1);
  a.reset();
  b.reset();
  c.reset();
  EXPECT_FALSE(wa.expired());
  EXPECT_FALSE(wb.expired());
  EXPECT_FALSE(wc.expired());
  keeper.reset();
  EXPECT_TRUE(wa.expired());
  EXPECT_TRUE(wb.expired());
  EXPECT_TRUE(wc.expired());
}

TEST(HeldTest, MakeWithBlockBuildsASmallRequestInsideItsMemory) {
  auto h = Held<TracesRequest>::MakeWithBlock<4096>();
  const auto* begin = reinterpret_cast<const char*>(h.memory.get());
  const auto* end = begin + sizeof(MemoryWithBlock<4096>);
  auto inside = [&](const void* p) {
    const auto* c = static_cast<const char*>(p);
    return c >= begin && c < end;
  };
  EXPECT_TRUE(inside(h.request));
  Span* s = h.request->add_resource_spans()->add_scope_spans()->add_spans();
  AddAttr(s->mutable_attributes(), semconv::kGenAiOperationName, "chat");
  EXPECT_TRUE(inside(s));
  EXPECT_TRUE(inside(&s->attributes(0)));
  // Past the block, the arena takes blocks of its own, and everything stays readable.
  for (int i = 0; i < 200; ++i) AddAttr(s->mutable_attributes(), "k" + std::to_string(i), i);
  EXPECT_FALSE(inside(&s->attributes(200)));
  Held<TracesRequest> copy = Held<TracesRequest>::Make();
  copy.request->CopyFrom(*h.request);
  h = {};
  ASSERT_EQ(copy.request->resource_spans(0).scope_spans(0).spans(0).attributes_size(), 201);
  EXPECT_EQ(copy.request->resource_spans(0).scope_spans(0).spans(0).attributes(200).key(), "k199");
}

}  // namespace
}  // namespace infertel::pipeline
