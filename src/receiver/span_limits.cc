#include "receiver/span_limits.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <charconv>
#include <limits>
#include <optional>
#include <vector>

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

// What LimitValue applies: the value limits, and the string length of this kind of value
// (UINT32_MAX: strings are not cut, as in a log record's body).
struct ValueLimits {
  std::uint32_t max_chars;
  std::uint32_t elements;
  std::uint32_t depth;
};
ValueLimits ForValues(const SpanLimits& l, std::uint32_t max_chars) {
  return {max_chars, l.value_element_count, l.value_depth};
}

void CutString(std::string* s, std::uint32_t max_chars, LimitCounts* c) {
  if (s->size() <= max_chars) return;  // never more characters than bytes
  const std::size_t keep = Utf8PrefixBytes(*s, max_chars);
  if (keep == s->size()) return;
  s->resize(keep);
  ++c->value_length;
}

// An array's or key-value list's elements: emptied past the depth limit (`level` is the
// collection's own: 1 for the value's outermost), else the first ones kept.
template <typename T>
bool LimitElements(RepeatedPtrField<T>* values, const ValueLimits& l, std::uint32_t level,
                   LimitCounts* c) {
  if (level > l.depth) {
    if (values->empty()) return false;
    values->Clear();
    ++c->value_depth;
    return false;
  }
  c->value_elements += KeepFirst(values, l.elements);
  return true;
}

// Brings one value within `l`; `level` is the depth of a collection this value would be.
void LimitValue(AnyValue* v, const ValueLimits& l, std::uint32_t level, LimitCounts* c) {
  if (v->has_string_value()) {
    CutString(v->mutable_string_value(), l.max_chars, c);
  } else if (v->has_array_value()) {
    auto* values = v->mutable_array_value()->mutable_values();
    if (!LimitElements(values, l, level, c)) return;
    for (auto& e : *values) LimitValue(&e, l, level + 1, c);
  } else if (v->has_kvlist_value()) {
    auto* values = v->mutable_kvlist_value()->mutable_values();
    if (!LimitElements(values, l, level, c)) return;
    for (auto& kv : *values)
      if (kv.has_value()) LimitValue(kv.mutable_value(), l, level + 1, c);
  }
}

// Keeps the first `limit` attributes and brings their values within `l`; returns how many
// were dropped.
std::uint64_t LimitAttributes(RepeatedPtrField<KeyValue>* attrs, std::uint32_t limit,
                              const ValueLimits& l, LimitCounts* c) {
  const std::uint64_t dropped = KeepFirst(attrs, limit);
  for (auto& kv : *attrs)
    if (kv.has_value()) LimitValue(kv.mutable_value(), l, 1, c);
  return dropped;
}

// A resource's attributes, the dropped ones added to its count.
void LimitResource(Resource* res, const SpanLimits& l, std::uint32_t max_chars, LimitCounts* c) {
  const std::uint64_t n = LimitAttributes(res->mutable_attributes(), l.resource_attribute_count,
                                          ForValues(l, max_chars), c);
  if (n > 0) res->set_dropped_attributes_count(AddDropped(res->dropped_attributes_count(), n));
  c->resource_attributes += n;
}

void LimitSpan(Span* s, const SpanLimits& l, LimitCounts* c) {
  const ValueLimits len = ForValues(l, l.attribute_value_length);
  const std::uint64_t attrs = LimitAttributes(s->mutable_attributes(), l.attribute_count, len, c);
  if (attrs > 0) s->set_dropped_attributes_count(AddDropped(s->dropped_attributes_count(), attrs));
  c->span_attributes += attrs;
  const std::uint64_t events = KeepFirst(s->mutable_events(), l.event_count);
  if (events > 0) s->set_dropped_events_count(AddDropped(s->dropped_events_count(), events));
  c->span_events += events;
  for (auto& ev : *s->mutable_events()) {
    const std::uint64_t n =
        LimitAttributes(ev.mutable_attributes(), l.event_attribute_count, len, c);
    if (n > 0) ev.set_dropped_attributes_count(AddDropped(ev.dropped_attributes_count(), n));
    c->event_attributes += n;
  }
  const std::uint64_t links = KeepFirst(s->mutable_links(), l.link_count);
  if (links > 0) s->set_dropped_links_count(AddDropped(s->dropped_links_count(), links));
  c->span_links += links;
  for (auto& link : *s->mutable_links()) {
    const std::uint64_t n =
        LimitAttributes(link.mutable_attributes(), l.link_attribute_count, len, c);
    if (n > 0) link.set_dropped_attributes_count(AddDropped(link.dropped_attributes_count(), n));
    c->link_attributes += n;
  }
}

// Whether LimitValue would leave `v` as it is.
bool ValueWithin(const AnyValue& v, const ValueLimits& l, std::uint32_t level) {
  if (v.has_string_value()) {
    const std::string& s = v.string_value();
    return s.size() <= l.max_chars || Utf8PrefixBytes(s, l.max_chars) == s.size();
  }
  const auto within = [&](const auto& values, auto value_of) {
    if (values.empty()) return true;
    if (level > l.depth || static_cast<std::uint32_t>(values.size()) > l.elements) return false;
    for (const auto& e : values)
      if (!ValueWithin(value_of(e), l, level + 1)) return false;
    return true;
  };
  if (v.has_array_value())
    return within(v.array_value().values(), [](const AnyValue& e) -> const AnyValue& { return e; });
  if (v.has_kvlist_value())
    return within(v.kvlist_value().values(),
                  [](const KeyValue& kv) -> const AnyValue& { return kv.value(); });
  return true;
}

template <typename Points>
void LimitExemplars(Points* points, const ValueLimits& len, std::uint32_t limit, LimitCounts* c) {
  for (auto& p : *points)
    for (auto& ex : *p.mutable_exemplars())
      c->exemplar_attributes += LimitAttributes(ex.mutable_filtered_attributes(), limit, len, c);
}

}  // namespace

std::string MetricPointProblem(const RepeatedPtrField<KeyValue>& attributes, const SpanLimits& l) {
  if (static_cast<std::uint32_t>(attributes.size()) > l.metric_attribute_count)
    return fmt::format("a data point has {} attributes, more than the limit of {}",
                       attributes.size(), l.metric_attribute_count);
  const ValueLimits len = ForValues(l, l.attribute_value_length);
  for (const auto& kv : attributes)
    if (kv.has_value() && !ValueWithin(kv.value(), len, 1))
      return fmt::format(
          "a data point's attribute value is past the value limits ({} characters, "
          "{} elements, {} levels)",
          l.attribute_value_length, l.value_element_count, l.value_depth);
  return {};
}

void ApplyMetricLimits(MetricsRequest* request, const SpanLimits& l, LimitCounts* c) {
  const ValueLimits len = ForValues(l, l.attribute_value_length);
  const std::uint32_t n = l.metric_attribute_count;
  for (auto& rm : *request->mutable_resource_metrics()) {
    if (rm.has_resource()) LimitResource(rm.mutable_resource(), l, l.attribute_value_length, c);
    for (auto& sm : *rm.mutable_scope_metrics()) {
      for (auto& m : *sm.mutable_metrics()) {
        if (m.has_gauge()) LimitExemplars(m.mutable_gauge()->mutable_data_points(), len, n, c);
        if (m.has_sum()) LimitExemplars(m.mutable_sum()->mutable_data_points(), len, n, c);
        if (m.has_histogram())
          LimitExemplars(m.mutable_histogram()->mutable_data_points(), len, n, c);
        if (m.has_exponential_histogram())
          LimitExemplars(m.mutable_exponential_histogram()->mutable_data_points(), len, n, c);
      }
    }
  }
}

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
  l.metric_attribute_count = general.value_or(l.metric_attribute_count);
  l.event_count = FirstSet(getenv, {e::kSpanEventCountLimit}, warnings).value_or(l.event_count);
  l.link_count = FirstSet(getenv, {e::kSpanLinkCountLimit}, warnings).value_or(l.link_count);
  l.log_attribute_count = count(e::kLogRecordAttributeCountLimit, l.log_attribute_count);
  const auto general_length = FirstSet(getenv, {e::kAttributeValueLengthLimit}, warnings);
  auto length = [&](std::string_view specific, std::uint32_t fallback) {
    if (auto v = FirstSet(getenv, {specific}, warnings)) return *v;
    return general_length.value_or(fallback);
  };
  l.attribute_value_length = length(e::kSpanAttributeValueLengthLimit, l.attribute_value_length);
  l.log_attribute_value_length =
      length(e::kLogRecordAttributeValueLengthLimit, l.log_attribute_value_length);
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
  log_attributes += o.log_attributes;
  value_elements += o.value_elements;
  value_depth += o.value_depth;
  unknown_fields += o.unknown_fields;
  exemplar_attributes += o.exemplar_attributes;
  return *this;
}

std::uint64_t LimitCounts::total() const {
  return span_attributes + span_events + span_links + event_attributes + link_attributes +
         resource_attributes + value_length + log_attributes + value_elements + value_depth +
         unknown_fields + exemplar_attributes;
}

void ApplySpanLimits(TracesRequest* request, const SpanLimits& l, LimitCounts* c) {
  for (auto& rs : *request->mutable_resource_spans()) {
    if (rs.has_resource()) LimitResource(rs.mutable_resource(), l, l.attribute_value_length, c);
    for (auto& ss : *rs.mutable_scope_spans())
      for (auto& s : *ss.mutable_spans()) LimitSpan(&s, l, c);
  }
}

void ApplyLogLimits(LogsRequest* request, const SpanLimits& l, LimitCounts* c) {
  const ValueLimits attr_values = ForValues(l, l.log_attribute_value_length);
  const ValueLimits body = ForValues(l, UINT32_MAX);
  for (auto& rl : *request->mutable_resource_logs()) {
    // A resource is not a log record: its values as a span's resource's.
    if (rl.has_resource()) LimitResource(rl.mutable_resource(), l, l.attribute_value_length, c);
    for (auto& sl : *rl.mutable_scope_logs()) {
      for (auto& r : *sl.mutable_log_records()) {
        const std::uint64_t n =
            LimitAttributes(r.mutable_attributes(), l.log_attribute_count, attr_values, c);
        if (n > 0) r.set_dropped_attributes_count(AddDropped(r.dropped_attributes_count(), n));
        c->log_attributes += n;
        if (r.has_body()) LimitValue(r.mutable_body(), body, 1, c);
      }
    }
  }
}

std::uint64_t DropUnknownFields(google::protobuf::Message* m) {
  const google::protobuf::Reflection* r = m->GetReflection();
  std::uint64_t n = static_cast<std::uint64_t>(r->GetUnknownFields(*m).field_count());
  if (n > 0) r->MutableUnknownFields(m)->Clear();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(*m, &fields);
  for (const auto* f : fields) {
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!f->is_repeated()) {
      n += DropUnknownFields(r->MutableMessage(m, f));
      continue;
    }
    const int size = r->FieldSize(*m, f);
    for (int i = 0; i < size; ++i) n += DropUnknownFields(r->MutableRepeatedMessage(m, f, i));
  }
  return n;
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
