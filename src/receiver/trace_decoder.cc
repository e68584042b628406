#include "receiver/trace_decoder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/common.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "core/static_key.h"
#include "receiver/span_limits.h"

namespace infertel::receiver {
namespace {

using google::protobuf::Arena;
using google::protobuf::Message;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using otlp_common::AnyValue;
using otlp_common::ArrayValue;
using otlp_common::InstrumentationScope;
using otlp_common::KeyValueList;
using otlp_trace::ResourceSpans;
using otlp_trace::ScopeSpans;
using otlp_trace::Status;

constexpr std::uint32_t kVarint = WireFormatLite::WIRETYPE_VARINT;
constexpr std::uint32_t kFixed64 = WireFormatLite::WIRETYPE_FIXED64;
constexpr std::uint32_t kLen = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr std::uint32_t kFixed32 = WireFormatLite::WIRETYPE_FIXED32;

// What reading one field came to: taken into the message, left to the unknown fields (a field
// the message does not have, or one it has with another wire type: protobuf keeps both as
// unknown), or a reason to give up.
enum class Got { kTaken, kUnknown, kGiveUp };

bool ValidUtf8(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80)
      return google::protobuf::internal::IsStructurallyValidUTF8(s.data(),
                                                                 static_cast<int>(s.size()));
  return true;
}

// The wire format over one contiguous buffer, with every read bounds-checked: protobuf's own
// rules, stricter where that is simpler (a stricter read only sends the input to protobuf).
class Reader {
 public:
  explicit Reader(std::string_view bytes)
      : p_(reinterpret_cast<const std::uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  bool done() const { return p_ == end_; }

  bool Varint(std::uint64_t* v) {
    std::uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {  // at most 10 bytes
      if (p_ == end_) return false;
      const std::uint8_t b = *p_++;
      r |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) {
        *v = r;
        return true;
      }
    }
    return false;
  }

  // A field's tag: at most 5 bytes whose value fits 32 bits (protobuf reads 5 at most and
  // drops the bits past 32); field number 0 is malformed.
  bool Tag(std::uint32_t* field, std::uint32_t* wire_type) {
    std::uint32_t tag;
    if (!Short(&tag, /*fifth_below=*/16) || (tag >> 3) == 0) return false;
    *field = tag >> 3;
    *wire_type = tag & 7;
    return true;
  }

  bool Fixed64(std::uint64_t* v) {
    if (end_ - p_ < 8) return false;
    p_ = CodedInputStream::ReadLittleEndian64FromArray(p_, v);
    return true;
  }

  bool Fixed32(std::uint32_t* v) {
    if (end_ - p_ < 4) return false;
    p_ = CodedInputStream::ReadLittleEndian32FromArray(p_, v);
    return true;
  }

  // A length-delimited field's bytes. Its length takes at most 5 bytes and is below 2^31, as
  // protobuf reads it.
  bool Len(std::string_view* out) {
    std::uint32_t n;
    if (!Short(&n, /*fifth_below=*/8) || n > static_cast<std::uint64_t>(end_ - p_)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
    p_ += n;
    return true;
  }

 private:
  // A varint of at most 5 bytes whose fifth byte, if any, is below `fifth_below`.
  bool Short(std::uint32_t* v, std::uint32_t fifth_below) {
    std::uint32_t r = 0;
    for (int i = 0; i < 5; ++i) {
      if (p_ == end_) return false;
      const std::uint32_t b = *p_++;
      if (i == 4 && b >= fifth_below) return false;
      r |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        *v = r;
        return true;
      }
    }
    return false;
  }

  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

// The span limits while decoding (receiver/span_limits.h). An item past a count limit is
// still decoded, so that the decoder takes only what protobuf takes, but onto a scratch arena
// that is reset before it grows past kScratchBytes: it costs no memory of the request. An
// item is decoded there with no limits (`none`), so that nothing inside it uses the scratch
// arena's reset while the item is alive.
class Limiter {
 public:
  Limiter(const SpanLimits* limits, LimitCounts* counts) : limits_(limits), counts_(counts) {}

  const SpanLimits* limits() const { return limits_; }
  // How many arrays and key-value lists the value being decoded is inside.
  std::uint32_t level() const { return level_; }
  void Enter() { ++level_; }
  void Leave() { --level_; }
  LimitCounts& counts() { return *counts_; }
  static Limiter& None() {
    static thread_local LimitCounts unused;
    static thread_local Limiter none(nullptr, &unused);
    return none;
  }
  // A message to decode an item past a limit into, and forget.
  template <typename T>
  T* Scratch() {
    constexpr std::uint64_t kScratchBytes = 1u << 20;
    if (scratch_.SpaceAllocated() > kScratchBytes) scratch_.Reset();
    return Arena::CreateMessage<T>(&scratch_);
  }

 private:
  const SpanLimits* limits_;
  LimitCounts* counts_;
  std::uint32_t level_ = 0;
  Arena scratch_;
};

// Keeps a field the message does not know in its unknown fields, as protobuf's parser does; or,
// within limits, reads it as protobuf would and counts it, without keeping it: OTLP defines no
// such field, and each kept one costs a heap entry of 16 bytes or more for 2 bytes of input.
bool KeepUnknown(Message* m, std::uint32_t field, std::uint32_t wire_type, Reader* r,
                 Limiter* lim) {
  const bool keep = lim->limits() == nullptr;
  if (!keep) ++lim->counts().unknown_fields;
  auto* unknown = keep ? m->GetReflection()->MutableUnknownFields(m) : nullptr;
  const int number = static_cast<int>(field);
  switch (wire_type) {
    case kVarint: {
      std::uint64_t v;
      if (!r->Varint(&v)) return false;
      if (keep) unknown->AddVarint(number, v);
      return true;
    }
    case kFixed64: {
      std::uint64_t v;
      if (!r->Fixed64(&v)) return false;
      if (keep) unknown->AddFixed64(number, v);
      return true;
    }
    case kFixed32: {
      std::uint32_t v;
      if (!r->Fixed32(&v)) return false;
      if (keep) unknown->AddFixed32(number, v);
      return true;
    }
    case kLen: {
      std::string_view s;
      if (!r->Len(&s)) return false;
      if (keep) unknown->AddLengthDelimited(number)->assign(s.data(), s.size());
      return true;
    }
    default:  // groups, which OTLP never sends, and invalid wire types
      return false;
  }
}

// Reads `body`'s fields into `m`, each through `field(number, wire_type, reader)`; the
// unknown ones as KeepUnknown does within `lim`.
template <typename OnField>
bool Fields(std::string_view body, Message* m, Limiter* lim, OnField&& field) {
  Reader r(body);
  while (!r.done()) {
    std::uint32_t number, wire_type;
    if (!r.Tag(&number, &wire_type)) return false;
    switch (field(number, wire_type, r)) {
      case Got::kTaken:
        break;
      case Got::kUnknown:
        if (!KeepUnknown(m, number, wire_type, &r, lim)) return false;
        break;
      case Got::kGiveUp:
        return false;
    }
  }
  return true;
}

Got Taken(bool ok) { return ok ? Got::kTaken : Got::kGiveUp; }

// A `bytes` field: any bytes; a `string` field (`utf8`): valid UTF-8, as protobuf checks for
// proto3. Written into the field's string as protobuf's parser does: one allocation when
// longer than the inline 15 characters. The field is reached through its mutable accessor only
// once the wire type matches: for a member of a oneof (AnyValue's), reaching it selects it.
template <typename M>
Got Bytes(std::uint32_t wire_type, Reader& r, M* m, std::string* (M::*field)(), bool utf8 = false) {
  if (wire_type != kLen) return Got::kUnknown;
  std::string_view s;
  if (!r.Len(&s) || (utf8 && !ValidUtf8(s))) return Got::kGiveUp;
  (m->*field)()->assign(s.data(), s.size());
  return Got::kTaken;
}
// A varint or fixed64 field, passed to `set` as read (the setter converts, as protobuf does).
template <typename Setter>
Got Scalar(std::uint32_t wire_type, std::uint32_t want, Reader& r, Setter set) {
  if (wire_type != want) return Got::kUnknown;
  std::uint64_t v;
  if (!(want == kVarint ? r.Varint(&v) : r.Fixed64(&v))) return Got::kGiveUp;
  set(v);
  return Got::kTaken;
}
template <typename Setter>
Got Varint(std::uint32_t wire_type, Reader& r, Setter set) {
  return Scalar(wire_type, kVarint, r, set);
}
template <typename Setter>
Got Fixed64(std::uint32_t wire_type, Reader& r, Setter set) {
  return Scalar(wire_type, kFixed64, r, set);
}
// A uint32 field (the dropped counts): protobuf keeps the low 32 bits of a longer varint.
template <typename M>
Got Uint32(std::uint32_t wire_type, Reader& r, M* m, void (M::*set)(std::uint32_t)) {
  return Varint(wire_type, r, [&](std::uint64_t x) { (m->*set)(static_cast<std::uint32_t>(x)); });
}
// A fixed64 field (the times).
template <typename M>
Got Uint64(std::uint32_t wire_type, Reader& r, M* m, void (M::*set)(std::uint64_t)) {
  return Fixed64(wire_type, r, [&](std::uint64_t x) { (m->*set)(x); });
}
// A message field: `decode(bytes)` reads it into the message it was made for.
template <typename Decode>
Got Nested(std::uint32_t wire_type, Reader& r, Decode decode) {
  if (wire_type != kLen) return Got::kUnknown;
  std::string_view s;
  return Taken(r.Len(&s) && decode(s));
}

// The next element of a repeated field limited to `limit` elements (no limit when the limiter
// has none): added to `field` and decoded by `decode(bytes, element, limiter)`, or, past the
// limit, decoded into a scratch element and counted in *dropped.
template <typename Repeated, typename Decode>
Got Limited(std::uint32_t wire_type, Reader& r, Repeated* field, std::uint32_t limit,
            std::uint64_t* dropped, Limiter* lim, Decode decode) {
  using T = std::remove_pointer_t<decltype(field->Add())>;
  return Nested(wire_type, r, [&](std::string_view e) {
    if (lim->limits() == nullptr || static_cast<std::uint32_t>(field->size()) < limit)
      return decode(e, field->Add(), lim);
    ++*dropped;
    return decode(e, lim->template Scratch<T>(), &Limiter::None());
  });
}

bool DecodeKeyValue(std::string_view body, KeyValue* kv, int depth, Limiter* lim);
bool DecodeAnyValue(std::string_view body, AnyValue* v, int depth, Limiter* lim);

// A limit of the limiter's, or none.
std::uint32_t LimitOf(const Limiter& lim, std::uint32_t SpanLimits::*limit) {
  return lim.limits() != nullptr ? lim.limits()->*limit : UINT32_MAX;
}

// An array's or a key-value list's elements, one nesting level below the list, within the
// limit of elements.
bool DecodeArrayValue(std::string_view body, ArrayValue* a, int depth, Limiter* lim) {
  return Fields(body, a, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    if (f != ArrayValue::kValuesFieldNumber) return Got::kUnknown;
    return Limited(wt, r, a->mutable_values(), LimitOf(*lim, &SpanLimits::value_element_count),
                   &lim->counts().value_elements, lim,
                   [depth](std::string_view e, AnyValue* v, Limiter* l) {
                     return DecodeAnyValue(e, v, depth + 1, l);
                   });
  });
}
bool DecodeKeyValueList(std::string_view body, KeyValueList* l, int depth, Limiter* lim) {
  return Fields(body, l, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    if (f != KeyValueList::kValuesFieldNumber) return Got::kUnknown;
    return Limited(wt, r, l->mutable_values(), LimitOf(*lim, &SpanLimits::value_element_count),
                   &lim->counts().value_elements, lim,
                   [depth](std::string_view e, KeyValue* kv, Limiter* lm) {
                     return DecodeKeyValue(e, kv, depth + 1, lm);
                   });
  });
}

// An array or key-value list value (`set` selects it in `v`), one level deeper; past the depth
// limit checked on the scratch arena and left empty, as ApplySpanLimits leaves it, and counted
// when it had elements.
template <typename C, typename Decode>
bool Collection(std::string_view body, AnyValue* v, C* (AnyValue::*set)(), int depth, Limiter* lim,
                Decode decode) {
  if (lim->limits() != nullptr && lim->level() >= lim->limits()->value_depth) {
    (v->*set)();
    C* scratch = lim->template Scratch<C>();
    if (!decode(body, scratch, depth + 1, &Limiter::None())) return false;
    if (scratch->values_size() > 0) ++lim->counts().value_depth;
    return true;
  }
  lim->Enter();
  const bool ok = decode(body, (v->*set)(), depth + 1, lim);
  lim->Leave();
  return ok;
}

// A string value, checked whole as protobuf checks it, and kept only up to the value length
// limit: a long value is never copied whole, only its first characters.
Got StringValue(std::uint32_t wire_type, Reader& r, AnyValue* v, Limiter* lim) {
  if (wire_type != kLen) return Got::kUnknown;
  std::string_view s;
  if (!r.Len(&s) || !ValidUtf8(s)) return Got::kGiveUp;
  if (lim->limits() != nullptr && s.size() > lim->limits()->attribute_value_length) {
    const std::size_t keep = Utf8PrefixBytes(s, lim->limits()->attribute_value_length);
    if (keep < s.size()) {
      s = s.substr(0, keep);
      ++lim->counts().value_length;
    }
  }
  v->mutable_string_value()->assign(s.data(), s.size());
  return Got::kTaken;
}

bool DecodeAnyValue(std::string_view body, AnyValue* v, int depth, Limiter* lim) {
  if (depth > kMaxDecodeDepth) return false;
  return Fields(body, v, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case AnyValue::kStringValueFieldNumber:
        return StringValue(wt, r, v, lim);
      case AnyValue::kBoolValueFieldNumber:
        return Varint(wt, r, [v](std::uint64_t x) { v->set_bool_value(x != 0); });
      case AnyValue::kIntValueFieldNumber:
        return Varint(wt, r,
                      [v](std::uint64_t x) { v->set_int_value(static_cast<std::int64_t>(x)); });
      case AnyValue::kDoubleValueFieldNumber:
        return Fixed64(wt, r, [v](std::uint64_t x) {
          double d;
          std::memcpy(&d, &x, sizeof d);
          v->set_double_value(d);
        });
      case AnyValue::kArrayValueFieldNumber:
        return Nested(wt, r, [&](std::string_view s) {
          return Collection(s, v, &AnyValue::mutable_array_value, depth, lim, DecodeArrayValue);
        });
      case AnyValue::kKvlistValueFieldNumber:
        return Nested(wt, r, [&](std::string_view s) {
          return Collection(s, v, &AnyValue::mutable_kvlist_value, depth, lim, DecodeKeyValueList);
        });
      case AnyValue::kBytesValueFieldNumber:
        return Bytes(wt, r, v, &AnyValue::mutable_bytes_value);
    }
    return Got::kUnknown;
  });
}

// The key interned when it can be (a key already set is replaced by a copy, as the last
// occurrence of a field wins); the value as protobuf reads it.
bool DecodeKeyValue(std::string_view body, KeyValue* kv, int depth, Limiter* lim) {
  if (depth > kMaxDecodeDepth) return false;
  return Fields(body, kv, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case KeyValue::kKeyFieldNumber: {
        if (wt != kLen) return Got::kUnknown;
        std::string_view s;
        if (!r.Len(&s) || !ValidUtf8(s)) return Got::kGiveUp;
        const StaticKey* key = s.empty() ? nullptr : InternKey(s);
        if (key != nullptr) {
          SetKey(kv, *key);
        } else {
          kv->mutable_key()->assign(s.data(), s.size());
        }
        return Got::kTaken;
      }
      case KeyValue::kValueFieldNumber:
        return Nested(wt, r, [&](std::string_view s) {
          return DecodeAnyValue(s, kv->mutable_value(), depth + 1, lim);
        });
    }
    return Got::kUnknown;
  });
}

// A repeated KeyValue field's next element, within `limit` attributes.
template <typename Repeated>
Got Attribute(std::uint32_t wire_type, Reader& r, Repeated* attrs, std::uint32_t limit,
              std::uint64_t* dropped, Limiter* lim) {
  return Limited(
      wire_type, r, attrs, limit, dropped, lim,
      [](std::string_view s, KeyValue* kv, Limiter* l) { return DecodeKeyValue(s, kv, 1, l); });
}

// Adds what the limits dropped to a message's dropped count (after its fields are read: the
// sender's own count may come after the items on the wire) and to the limiter's counts.
template <typename M>
void CountDropped(M* m, std::uint32_t (M::*get)() const, void (M::*set)(std::uint32_t),
                  std::uint64_t dropped, std::uint64_t* counted) {
  if (dropped == 0) return;
  (m->*set)(AddDropped((m->*get)(), dropped));
  *counted += dropped;
}

bool DecodeResource(std::string_view body, Resource* res, Limiter* lim) {
  std::uint64_t dropped = 0;
  const std::uint32_t limit = LimitOf(*lim, &SpanLimits::resource_attribute_count);
  const bool ok = Fields(body, res, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case Resource::kAttributesFieldNumber:
        return Attribute(wt, r, res->mutable_attributes(), limit, &dropped, lim);
      case Resource::kDroppedAttributesCountFieldNumber:
        return Uint32(wt, r, res, &Resource::set_dropped_attributes_count);
    }
    return Got::kUnknown;
  });
  CountDropped(res, &Resource::dropped_attributes_count, &Resource::set_dropped_attributes_count,
               dropped, &lim->counts().resource_attributes);
  return ok;
}

bool DecodeScope(std::string_view body, InstrumentationScope* scope, Limiter* lim) {
  return Fields(body, scope, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case InstrumentationScope::kNameFieldNumber:
        return Bytes(wt, r, scope, &InstrumentationScope::mutable_name, /*utf8=*/true);
      case InstrumentationScope::kVersionFieldNumber:
        return Bytes(wt, r, scope, &InstrumentationScope::mutable_version, /*utf8=*/true);
    }
    return Got::kUnknown;
  });
}

bool DecodeStatus(std::string_view body, Status* st, Limiter* lim) {
  return Fields(body, st, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case Status::kMessageFieldNumber:
        return Bytes(wt, r, st, &Status::mutable_message, /*utf8=*/true);
      case Status::kCodeFieldNumber:  // an open enum: any value is kept
        return Varint(wt, r, [st](std::uint64_t x) {
          st->set_code(static_cast<Status::StatusCode>(static_cast<std::int32_t>(x)));
        });
    }
    return Got::kUnknown;
  });
}

bool DecodeEvent(std::string_view body, Span::Event* ev, Limiter* lim) {
  std::uint64_t dropped = 0;
  const std::uint32_t limit = LimitOf(*lim, &SpanLimits::event_attribute_count);
  const bool ok = Fields(body, ev, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case Span::Event::kTimeUnixNanoFieldNumber:
        return Uint64(wt, r, ev, &Span::Event::set_time_unix_nano);
      case Span::Event::kNameFieldNumber:
        return Bytes(wt, r, ev, &Span::Event::mutable_name, /*utf8=*/true);
      case Span::Event::kAttributesFieldNumber:
        return Attribute(wt, r, ev->mutable_attributes(), limit, &dropped, lim);
      case Span::Event::kDroppedAttributesCountFieldNumber:
        return Uint32(wt, r, ev, &Span::Event::set_dropped_attributes_count);
    }
    return Got::kUnknown;
  });
  CountDropped(ev, &Span::Event::dropped_attributes_count,
               &Span::Event::set_dropped_attributes_count, dropped,
               &lim->counts().event_attributes);
  return ok;
}

bool DecodeLink(std::string_view body, Span::Link* link, Limiter* lim) {
  std::uint64_t dropped = 0;
  const std::uint32_t limit = LimitOf(*lim, &SpanLimits::link_attribute_count);
  const bool ok = Fields(body, link, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case Span::Link::kTraceIdFieldNumber:
        return Bytes(wt, r, link, &Span::Link::mutable_trace_id);
      case Span::Link::kSpanIdFieldNumber:
        return Bytes(wt, r, link, &Span::Link::mutable_span_id);
      case Span::Link::kTraceStateFieldNumber:
        return Bytes(wt, r, link, &Span::Link::mutable_trace_state, /*utf8=*/true);
      case Span::Link::kAttributesFieldNumber:
        return Attribute(wt, r, link->mutable_attributes(), limit, &dropped, lim);
      case Span::Link::kDroppedAttributesCountFieldNumber:
        return Uint32(wt, r, link, &Span::Link::set_dropped_attributes_count);
    }
    return Got::kUnknown;
  });
  CountDropped(link, &Span::Link::dropped_attributes_count,
               &Span::Link::set_dropped_attributes_count, dropped, &lim->counts().link_attributes);
  return ok;
}

// What the limits dropped of one span's items.
struct SpanDropped {
  std::uint64_t attributes = 0, events = 0, links = 0;
};

// One field of a span.
Got SpanField(std::uint32_t f, std::uint32_t wt, Reader& r, Span* s, Limiter* lim, SpanDropped* d) {
  switch (f) {
    case Span::kTraceIdFieldNumber:
      return Bytes(wt, r, s, &Span::mutable_trace_id);
    case Span::kSpanIdFieldNumber:
      return Bytes(wt, r, s, &Span::mutable_span_id);
    case Span::kTraceStateFieldNumber:
      return Bytes(wt, r, s, &Span::mutable_trace_state, /*utf8=*/true);
    case Span::kParentSpanIdFieldNumber:
      return Bytes(wt, r, s, &Span::mutable_parent_span_id);
    case Span::kNameFieldNumber:
      return Bytes(wt, r, s, &Span::mutable_name, /*utf8=*/true);
    case Span::kKindFieldNumber:  // an open enum: any value is kept
      return Varint(wt, r, [s](std::uint64_t x) {
        s->set_kind(static_cast<Span::SpanKind>(static_cast<std::int32_t>(x)));
      });
    case Span::kStartTimeUnixNanoFieldNumber:
      return Uint64(wt, r, s, &Span::set_start_time_unix_nano);
    case Span::kEndTimeUnixNanoFieldNumber:
      return Uint64(wt, r, s, &Span::set_end_time_unix_nano);
    case Span::kAttributesFieldNumber:
      return Attribute(wt, r, s->mutable_attributes(), LimitOf(*lim, &SpanLimits::attribute_count),
                       &d->attributes, lim);
    case Span::kDroppedAttributesCountFieldNumber:
      return Uint32(wt, r, s, &Span::set_dropped_attributes_count);
    case Span::kEventsFieldNumber:
      return Limited(wt, r, s->mutable_events(), LimitOf(*lim, &SpanLimits::event_count),
                     &d->events, lim, DecodeEvent);
    case Span::kDroppedEventsCountFieldNumber:
      return Uint32(wt, r, s, &Span::set_dropped_events_count);
    case Span::kLinksFieldNumber:
      return Limited(wt, r, s->mutable_links(), LimitOf(*lim, &SpanLimits::link_count), &d->links,
                     lim, DecodeLink);
    case Span::kDroppedLinksCountFieldNumber:
      return Uint32(wt, r, s, &Span::set_dropped_links_count);
    case Span::kStatusFieldNumber:
      return Nested(wt, r, [s, lim](std::string_view e) {
        return DecodeStatus(e, s->mutable_status(), lim);
      });
  }
  return Got::kUnknown;
}

bool DecodeSpan(std::string_view body, Span* s, Limiter* lim) {
  SpanDropped d;
  const bool ok = Fields(body, s, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    return SpanField(f, wt, r, s, lim, &d);
  });
  LimitCounts& c = lim->counts();
  CountDropped(s, &Span::dropped_attributes_count, &Span::set_dropped_attributes_count,
               d.attributes, &c.span_attributes);
  CountDropped(s, &Span::dropped_events_count, &Span::set_dropped_events_count, d.events,
               &c.span_events);
  CountDropped(s, &Span::dropped_links_count, &Span::set_dropped_links_count, d.links,
               &c.span_links);
  return ok;
}

bool DecodeScopeSpans(std::string_view body, ScopeSpans* ss, Limiter* lim) {
  return Fields(body, ss, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case ScopeSpans::kScopeFieldNumber:
        return Nested(wt, r, [ss, lim](std::string_view e) {
          return DecodeScope(e, ss->mutable_scope(), lim);
        });
      case ScopeSpans::kSpansFieldNumber:
        return Nested(
            wt, r, [ss, lim](std::string_view e) { return DecodeSpan(e, ss->add_spans(), lim); });
      case ScopeSpans::kSchemaUrlFieldNumber:
        return Bytes(wt, r, ss, &ScopeSpans::mutable_schema_url, /*utf8=*/true);
    }
    return Got::kUnknown;
  });
}

bool DecodeResourceSpans(std::string_view body, ResourceSpans* rs, Limiter* lim) {
  return Fields(body, rs, lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    switch (f) {
      case ResourceSpans::kResourceFieldNumber:
        // A second resource is merged into the first by protobuf, its dropped count replacing
        // the first's: left to protobuf, and the limits applied after, so that the counts add
        // up as they do for one resource. No SDK sends two.
        if (wt == kLen && rs->has_resource()) return Got::kGiveUp;
        return Nested(wt, r, [rs, lim](std::string_view e) {
          return DecodeResource(e, rs->mutable_resource(), lim);
        });
      case ResourceSpans::kScopeSpansFieldNumber:
        return Nested(wt, r, [rs, lim](std::string_view e) {
          return DecodeScopeSpans(e, rs->add_scope_spans(), lim);
        });
      case ResourceSpans::kSchemaUrlFieldNumber:
        return Bytes(wt, r, rs, &ResourceSpans::mutable_schema_url, /*utf8=*/true);
      case ResourceSpans::kInstrumentationLibrarySpansFieldNumber:
        // Deprecated since OTLP 0.15 and sent by no current SDK: left to protobuf.
        return wt == kLen ? Got::kGiveUp : Got::kUnknown;
    }
    return Got::kUnknown;
  });
}

}  // namespace

bool DecodeTraces(std::string_view wire, TracesRequest* out, const SpanLimits* limits,
                  LimitCounts* counts) {
  LimitCounts unused;
  Limiter lim(limits, counts != nullptr ? counts : &unused);
  return Fields(wire, out, &lim, [&](std::uint32_t f, std::uint32_t wt, Reader& r) {
    if (f != TracesRequest::kResourceSpansFieldNumber) return Got::kUnknown;
    return Nested(wt, r, [out, &lim](std::string_view e) {
      return DecodeResourceSpans(e, out->add_resource_spans(), &lim);
    });
  });
}

}  // namespace infertel::receiver
