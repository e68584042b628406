#pragma once
// Signal traits: one place that knows how the three OTLP request types nest
// (request → resource → scope → item), so batching, merging and splitting are written once.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/telemetry.h"

namespace infertel::pipeline {

template <typename Request>
struct SignalTraits;

template <>
struct SignalTraits<TracesRequest> {
  static constexpr std::string_view kName = "traces";
  static auto* Resources(TracesRequest* r) { return r->mutable_resource_spans(); }
  static const auto& Resources(const TracesRequest& r) { return r.resource_spans(); }
  template <typename R>
  static auto* Scopes(R* r) {
    return r->mutable_scope_spans();
  }
  template <typename S>
  static auto* Items(S* s) {
    return s->mutable_spans();
  }
  template <typename R>
  static const auto& Scopes(const R& r) {
    return r.scope_spans();
  }
  template <typename S>
  static const auto& Items(const S& s) {
    return s.spans();
  }
};

template <>
struct SignalTraits<LogsRequest> {
  static constexpr std::string_view kName = "logs";
  static auto* Resources(LogsRequest* r) { return r->mutable_resource_logs(); }
  static const auto& Resources(const LogsRequest& r) { return r.resource_logs(); }
  template <typename R>
  static auto* Scopes(R* r) {
    return r->mutable_scope_logs();
  }
  template <typename S>
  static auto* Items(S* s) {
    return s->mutable_log_records();
  }
  template <typename R>
  static const auto& Scopes(const R& r) {
    return r.scope_logs();
  }
  template <typename S>
  static const auto& Items(const S& s) {
    return s.log_records();
  }
};

template <>
struct SignalTraits<MetricsRequest> {
  static constexpr std::string_view kName = "metrics";
  static auto* Resources(MetricsRequest* r) { return r->mutable_resource_metrics(); }
  static const auto& Resources(const MetricsRequest& r) { return r.resource_metrics(); }
  template <typename R>
  static auto* Scopes(R* r) {
    return r->mutable_scope_metrics();
  }
  template <typename S>
  static auto* Items(S* s) {
    return s->mutable_metrics();
  }
  template <typename R>
  static const auto& Scopes(const R& r) {
    return r.scope_metrics();
  }
  template <typename S>
  static const auto& Items(const S& s) {
    return s.metrics();
  }
};

// Appends to `to` (a field on an arena) a block whose header (resource or scope) and schema
// URL are `from`'s, the header borrowed, with no children. See pipeline/held.h.
template <typename Block>
Block* AddBorrowed(google::protobuf::RepeatedPtrField<Block>* to, const Block& from) {
  Block* b = to->Add();
  if constexpr (requires { from.resource(); }) {
    if (from.has_resource())
      b->unsafe_arena_set_allocated_resource(const_cast<Resource*>(&from.resource()));
  } else {
    if (from.has_scope())
      b->unsafe_arena_set_allocated_scope(
          const_cast<otlp_common::InstrumentationScope*>(&from.scope()));
  }
  if (!from.schema_url().empty()) b->set_schema_url(from.schema_url());
  return b;
}

// Appends to `to` (on an arena) pointers to every element of `from`, which it borrows.
template <typename T>
void LinkAll(const google::protobuf::RepeatedPtrField<T>& from,
             google::protobuf::RepeatedPtrField<T>* to) {
  to->Reserve(to->size() + from.size());
  for (const T& e : from) to->UnsafeArenaAddAllocated(const_cast<T*>(&e));
}

// Appends requests to `dst` by linking (no copies; see Link). A resource block whose Resource
// and schema_url equal one already in `dst` is folded into it, and likewise a scope block into an
// equal scope, so a batch of many small requests from one producer exports as one
// ResourceSpans with one ScopeSpans. Blocks are compared by their serialized form, which the
// merger keeps for `dst`'s blocks: each block is serialized once, not once per comparison. A
// header that is the very object one of `dst`'s blocks borrows (a producer that shares one
// resource across its requests, as the gateway's entry spans do) matches without serializing.
template <typename Request>
class Merger {
  using T = SignalTraits<Request>;

 public:
  explicit Merger(Request* dst) : dst_(dst) {
    for (auto& rs : *T::Resources(dst_))
      blocks_.push_back(BlockOf(rs, Key(rs.resource(), rs.schema_url())));
  }

  // Appends `src`'s blocks, folding as above. `src` is left as it was and `dst` borrows from
  // it: its new blocks point at `src`'s headers and items, so `dst` must be on an arena and
  // `src` must outlive it (see pipeline/held.h).
  void Link(const Request& src) {
    auto* dst_res = T::Resources(dst_);
    for (const auto& rs : T::Resources(src)) {
      auto [r, fresh] = FindResource(rs);
      if (fresh) AddBorrowed(dst_res, rs);
      auto* dst_scopes = T::Scopes(dst_res->Mutable(static_cast<int>(r)));
      for (const auto& ss : T::Scopes(rs)) {
        auto [j, fresh_scope] = FindScope(r, ss);
        auto* target =
            fresh_scope ? AddBorrowed(dst_scopes, ss) : dst_scopes->Mutable(static_cast<int>(j));
        LinkAll(T::Items(ss), T::Items(target));
      }
    }
  }

 private:
  struct Block {
    std::string key;
    std::vector<std::string> scopes;
  };
  // True when block `b` has a header and it is the very object block `a` points at, under
  // the same schema URL: then the headers are equal without comparing their bytes.
  template <typename B>
  static bool SameHeader(const B& a, const B& b) {
    if constexpr (requires { b.resource(); }) {
      return b.has_resource() && &a.resource() == &b.resource() && a.schema_url() == b.schema_url();
    } else {
      return b.has_scope() && &a.scope() == &b.scope() && a.schema_url() == b.schema_url();
    }
  }
  // A resource block's entry: its key and its scopes' keys.
  template <typename ResourceBlock>
  static Block BlockOf(const ResourceBlock& rs, std::string key) {
    Block b{std::move(key), {}};
    for (const auto& ss : T::Scopes(rs)) b.scopes.push_back(Key(ss.scope(), ss.schema_url()));
    return b;
  }
  // The index of the block in dst_ equal to resource block `rs`, and whether it is new (then
  // registered without scopes, to be appended by the caller at that index).
  template <typename ResourceBlock>
  std::pair<std::size_t, bool> FindResource(const ResourceBlock& rs) {
    const auto& dst_res = *T::Resources(dst_);
    for (std::size_t r = 0; r < blocks_.size(); ++r)
      if (SameHeader(dst_res[static_cast<int>(r)], rs)) return {r, false};
    std::string key = Key(rs.resource(), rs.schema_url());
    for (std::size_t r = 0; r < blocks_.size(); ++r)
      if (blocks_[r].key == key) return {r, false};
    blocks_.push_back(Block{std::move(key), {}});
    return {blocks_.size() - 1, true};
  }
  // The same for scope block `ss` under dst_'s resource block `r`.
  template <typename ScopeBlock>
  std::pair<std::size_t, bool> FindScope(std::size_t r, const ScopeBlock& ss) {
    std::vector<std::string>& scope_keys = blocks_[r].scopes;
    const auto& dst_scopes = T::Scopes((*T::Resources(dst_))[static_cast<int>(r)]);
    for (std::size_t j = 0; j < scope_keys.size(); ++j)
      if (SameHeader(dst_scopes[static_cast<int>(j)], ss)) return {j, false};
    std::string key = Key(ss.scope(), ss.schema_url());
    for (std::size_t j = 0; j < scope_keys.size(); ++j)
      if (scope_keys[j] == key) return {j, false};
    scope_keys.push_back(std::move(key));
    return {scope_keys.size() - 1, true};
  }
  // The message's length, the message, then the schema URL: unambiguous for any bytes.
  template <typename M>
  static std::string Key(const M& m, const std::string& schema_url) {
    std::string bytes = m.SerializeAsString();
    std::string k = std::to_string(bytes.size());
    k += ':';
    k += bytes;
    k += schema_url;
    return k;
  }

  Request* dst_;
  std::vector<Block> blocks_;
};

}  // namespace infertel::pipeline
