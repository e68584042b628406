#pragma once
// Wire encoding of an export batch with one size computation per item.
//
// protobuf's own serializer walks a message twice (ByteSizeLong, then the write), and gRPC's
// codec adds a third walk; the batch processor has already sized every item at Submit for its
// byte bound. Encode() therefore sizes only the resource and scope headers afresh and reuses
// each item's cached size: at 4 spans out per span in, the two walks saved were about 9 % of
// the agent's CPU in the OTLP benchmark (docs/performance-history.md).
//
// Precondition: no item (span, log record, metric) changed since ByteSizeLong() last ran on it
// or on a message holding it. An item never sized (cached size 0) is sized here. The batch
// processor keeps this: it sizes each lane's own copy at Submit, and batching only moves
// items between requests. Headers carrying unknown fields fall back to protobuf's serializer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/signal.h"
#include "pipeline/span_wire.h"
#include "pipeline/wire.h"

namespace infertel::pipeline {

namespace encode_internal {

// Field numbers shared by the three signals: Resource{Spans,Logs,Metrics} and
// Scope{Spans,Logs,Metrics} both hold (header = 1, children = 2, schema_url = 3), and the
// request holds its resource blocks as field 1.
constexpr int kHeaderField = 1;
constexpr int kChildField = 2;
constexpr int kSchemaField = 3;

using wire::LengthDelimited;
using wire::WriteHead;
using wire::WriteMessage;
using wire::WriteString;

// An item (span, log record, metric) as field 2 of its scope block. Spans, the items of
// which there are most, are written field by field (span_wire.h); the rest by protobuf.
template <typename M>
std::uint8_t* WriteItem(const M& m, std::uint8_t* p) {
  return WriteMessage(kChildField, m, p);
}
inline std::uint8_t* WriteItem(const Span& span, std::uint8_t* p) {
  p = WriteHead(kChildField, static_cast<std::size_t>(span.GetCachedSize()), p);
  return WriteSpanFields(span, p);
}

template <typename M>
std::size_t CachedSize(const M& m) {
  const int cached = m.GetCachedSize();
  return cached != 0 ? static_cast<std::size_t>(cached) : m.ByteSizeLong();
}

template <typename M>
bool HasUnknown(const M& m) {
  return !m.GetReflection()->GetUnknownFields(m).empty();
}

}  // namespace encode_internal

// Appends the wire form of `request` to `out`: byte for byte what request.SerializeAsString()
// gives when the precondition above holds.
template <typename Request>
void Encode(const Request& request, std::string* out) {
  namespace ei = encode_internal;
  using T = SignalTraits<Request>;
  const auto& resources = T::Resources(request);
  bool fallback = ei::HasUnknown(request);
  for (const auto& rs : resources) {
    fallback = fallback || ei::HasUnknown(rs);
    for (const auto& ss : T::Scopes(rs)) fallback = fallback || ei::HasUnknown(ss);
  }
  if (fallback) {
    request.AppendToString(out);
    return;
  }
  // First pass: the length of every resource and scope block, in order (a scope's length
  // follows its resource's), and the header sizes, which ByteSizeLong caches for the write.
  std::vector<std::size_t> lengths;
  std::size_t total = 0;
  for (const auto& rs : resources) {
    const std::size_t at = lengths.size();
    lengths.push_back(0);
    std::size_t rlen = 0;
    if (rs.has_resource())
      rlen += ei::LengthDelimited(ei::kHeaderField, rs.resource().ByteSizeLong());
    for (const auto& ss : T::Scopes(rs)) {
      std::size_t slen = 0;
      if (ss.has_scope()) slen += ei::LengthDelimited(ei::kHeaderField, ss.scope().ByteSizeLong());
      for (const auto& item : T::Items(ss))
        slen += ei::LengthDelimited(ei::kChildField, ei::CachedSize(item));
      if (!ss.schema_url().empty())
        slen += ei::LengthDelimited(ei::kSchemaField, ss.schema_url().size());
      lengths.push_back(slen);
      rlen += ei::LengthDelimited(ei::kChildField, slen);
    }
    if (!rs.schema_url().empty())
      rlen += ei::LengthDelimited(ei::kSchemaField, rs.schema_url().size());
    lengths[at] = rlen;
    total += ei::LengthDelimited(ei::kHeaderField, rlen);
  }
  const std::size_t base = out->size();
  out->resize(base + total);
  auto* p = reinterpret_cast<std::uint8_t*>(out->data()) + base;
  std::size_t next = 0;
  for (const auto& rs : resources) {
    p = ei::WriteHead(ei::kHeaderField, lengths[next++], p);
    if (rs.has_resource()) p = ei::WriteMessage(ei::kHeaderField, rs.resource(), p);
    for (const auto& ss : T::Scopes(rs)) {
      p = ei::WriteHead(ei::kChildField, lengths[next++], p);
      if (ss.has_scope()) p = ei::WriteMessage(ei::kHeaderField, ss.scope(), p);
      for (const auto& item : T::Items(ss)) p = ei::WriteItem(item, p);
      if (!ss.schema_url().empty()) p = ei::WriteString(ei::kSchemaField, ss.schema_url(), p);
    }
    if (!rs.schema_url().empty()) p = ei::WriteString(ei::kSchemaField, rs.schema_url(), p);
  }
}

template <typename Request>
std::string Encode(const Request& request) {
  std::string out;
  Encode(request, &out);
  return out;
}

}  // namespace infertel::pipeline
