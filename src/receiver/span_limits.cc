#include "receiver/span_limits.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <optional>

#include "core/otel_env.h"

namespace infertel::receiver {
namespace {

using google::protobuf::RepeatedPtrField;

// The first of `names` that is set, as a limit; a malformed value is skipped with a warning.
std::optional<std::uint32_t> FirstSet(const std::function<const char*(const char*)>& getenv,
                                      std::initializer_list<std::string_view> names,
                                      std::vector<std::string>* warnings) {
  for (std::string_view name : names) {
    const char* v = getenv(name.data());
    if (v == nullptr || *v == '\0') continue;
    const std::string_view s(v);
    std::uint32_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size()) return n;
    warnings->push_back(
        fmt::format("{}='{}' is not a whole number below 2^32; ignored", name, s.substr(0, 64)));
  }
  return std::nullopt;
}

// Drops the elements of `field` past `limit`; returns how many.
template <typename T>
std::uint64_t KeepFirst(RepeatedPtrField<T>* field, std::uint32_t limit) {
  if (static_cast<std::uint32_t>(field->size()) <= limit) return 0;
  const int extra = field->size() - static_cast<int>(limit);
  field->DeleteSubrange(static_cast<int>(limit), extra);
  return static_cast<std::uint64_t>(extra);
}

void CutStrings(AnyValue* v, std::uint32_t max_chars, std::uint64_t* cut) {
  if (v->has_string_value()) {
    std::string* s = v->mutable_string_value();
    if (s->size() <= max_chars) return;  // never more characters than bytes
    const std::size_t keep = Utf8PrefixBytes(*s, max_chars);
    if (keep == s->size()) return;
    s->resize(keep);
    ++*cut;
  } else if (v->has_array_value()) {
    for (auto& e : *v->mutable_array_value()->mutable_values()) CutStrings(&e, max_chars, cut);
  } else if (v->has_kvlist_value()) {
    for (auto& kv : *v->mutable_kvlist_value()->mutable_values())
      if (kv.has_value()) CutStrings(kv.mutable_value(), max_chars, cut);
  }
}

// Keeps the first `limit` attributes, cuts long strings; returns how many were dropped.
std::uint64_t LimitAttributes(RepeatedPtrField<KeyValue>* attrs, std::uint32_t limit,
                              std::uint32_t max_chars, std::uint64_t* cut) {
  const std::uint64_t dropped = KeepFirst(attrs, limit);
  for (auto& kv : *attrs)
    if (kv.has_value()) CutStrings(kv.mutable_value(), max_chars, cut);
  return dropped;
}

void LimitSpan(Span* s, const SpanLimits& l, LimitCounts* c) {
  const std::uint32_t len = l.attribute_value_length;
  const std::uint64_t attrs =
      LimitAttributes(s->mutable_attributes(), l.attribute_count, len, &c->value_length);
  if (attrs > 0) s->set_dropped_attributes_count(AddDropped(s->dropped_attributes_count(), attrs));
  c->span_attributes += attrs;
  const std::uint64_t events = KeepFirst(s->mutable_events(), l.event_count);
  if (events > 0) s->set_dropped_events_count(AddDropped(s->dropped_events_count(), events));
  c->span_events += events;
  for (auto& ev : *s->mutable_events()) {
    const std::uint64_t n =
        LimitAttributes(ev.mutable_attributes(), l.event_attribute_count, len, &c->value_length);
    if (n > 0) ev.set_dropped_attributes_count(AddDropped(ev.dropped_attributes_count(), n));
    c->event_attributes += n;
  }
  const std::uint64_t links = KeepFirst(s->mutable_links(), l.link_count);
  if (links > 0) s->set_dropped_links_count(AddDropped(s->dropped_links_count(), links));
  c->span_links += links;
  for (auto& link : *s->mutable_links()) {
    const std::uint64_t n =
        LimitAttributes(link.mutable_attributes(), l.link_attribute_count, len, &c->value_length);
    if (n > 0) link.set_dropped_attributes_count(AddDropped(link.dropped_attributes_count(), n));
    c->link_attributes += n;
  }
}

}  // namespace

SpanLimits SpanLimitsFromEnv(const std::function<const char*(const char*)>& getenv,
                             std::vector<std::string>* warnings) {
  namespace e = otel_env;
  SpanLimits l;
  const auto general = FirstSet(getenv, {e::kAttributeCountLimit}, warnings);
  auto count = [&](std::string_view specific, std::uint32_t fallback) {
    if (auto v = FirstSet(getenv, {specific}, warnings)) return *v;
    return general.value_or(fallback);
  };
  l.attribute_count = count(e::kSpanAttributeCountLimit, l.attribute_count);
  l.event_attribute_count = count(e::kEventAttributeCountLimit, l.event_attribute_count);
  l.link_attribute_count = count(e::kLinkAttributeCountLimit, l.link_attribute_count);
  l.resource_attribute_count = general.value_or(l.resource_attribute_count);
  l.event_count = FirstSet(getenv, {e::kSpanEventCountLimit}, warnings).value_or(l.event_count);
  l.link_count = FirstSet(getenv, {e::kSpanLinkCountLimit}, warnings).value_or(l.link_count);
  l.attribute_value_length =
      FirstSet(getenv, {e::kSpanAttributeValueLengthLimit, e::kAttributeValueLengthLimit}, warnings)
          .value_or(l.attribute_value_length);
  return l;
}

LimitCounts& LimitCounts::operator+=(const LimitCounts& o) {
  span_attributes += o.span_attributes;
  span_events += o.span_events;
  span_links += o.span_links;
  event_attributes += o.event_attributes;
  link_attributes += o.link_attributes;
  resource_attributes += o.resource_attributes;
  value_length += o.value_length;
  return *this;
}

std::uint64_t LimitCounts::total() const {
  return span_attributes + span_events + span_links + event_attributes + link_attributes +
         resource_attributes + value_length;
}

void ApplySpanLimits(TracesRequest* request, const SpanLimits& l, LimitCounts* c) {
  for (auto& rs : *request->mutable_resource_spans()) {
    if (rs.has_resource()) {
      Resource* res = rs.mutable_resource();
      const std::uint64_t n = LimitAttributes(res->mutable_attributes(), l.resource_attribute_count,
                                              l.attribute_value_length, &c->value_length);
      if (n > 0) res->set_dropped_attributes_count(AddDropped(res->dropped_attributes_count(), n));
      c->resource_attributes += n;
    }
    for (auto& ss : *rs.mutable_scope_spans())
      for (auto& s : *ss.mutable_spans()) LimitSpan(&s, l, c);
  }
}

std::size_t Utf8PrefixBytes(std::string_view s, std::size_t max_chars) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    // A character starts at every byte that is not a continuation byte (10xxxxxx).
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (chars == max_chars) return i;
      ++chars;
    }
  }
  return s.size();
}

std::uint32_t AddDropped(std::uint32_t dropped, std::uint64_t more) {
  const std::uint64_t sum = std::uint64_t{dropped} + more;
  return sum > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                         : static_cast<std::uint32_t>(sum);
}

}  // namespace infertel::receiver
