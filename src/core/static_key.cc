#include "core/static_key.h"

#include <google/protobuf/arenastring.h>
#include <google/protobuf/stubs/common.h>

#include <array>
#include <atomic>
#include <functional>

namespace infertel {

// protobuf 3.21 (Debian 12's) keeps a string field as an ArenaStringPtr in the generated
// message's `_impl_`, and lets a "default" value be any string it does not own. The field is
// private: an explicit instantiation may name it (access is not checked there), and hands its
// pointer-to-member out through a friend. Other protobuf versions copy the key.
#if GOOGLE_PROTOBUF_VERSION >= 3021000 && GOOGLE_PROTOBUF_VERSION < 3022000
#define INFERTEL_STATIC_KEYS 1
namespace {
struct KeyValueImpl {};
struct SpanImpl {};
auto ImplOf(KeyValueImpl);
auto ImplOf(SpanImpl);
template <typename Tag, auto Member>
struct ImplAccess {
  friend auto ImplOf(Tag) { return Member; }
};
template struct ImplAccess<KeyValueImpl, &KeyValue::_impl_>;
template struct ImplAccess<SpanImpl, &Span::_impl_>;

// Points a string field still unset at `value` (protobuf neither writes nor frees a field's
// "default"); false when the field is set, and the caller copies.
bool Share(google::protobuf::internal::ArenaStringPtr* field, const std::string& value) {
  if (!field->IsDefault() || !field->Get().empty()) return false;
  google::protobuf::internal::TaggedStringPtr shared;
  shared.SetDefault(&value);
  field->UnsafeSetTaggedPointer(shared);
  return true;
}
}  // namespace
#endif

void SetKey(KeyValue* kv, const StaticKey& key) {
#ifdef INFERTEL_STATIC_KEYS
  if (Share(&(kv->*ImplOf(KeyValueImpl{})).key_, key.str())) return;
#endif
  kv->set_key(key.str());
}

void ShareSpanStrings(Span* span, const std::string& trace_id, const std::string& parent_span_id,
                      const StaticKey& name) {
#ifdef INFERTEL_STATIC_KEYS
  auto& impl = span->*ImplOf(SpanImpl{});
  if (!Share(&impl.trace_id_, trace_id)) span->set_trace_id(trace_id);
  if (!Share(&impl.parent_span_id_, parent_span_id)) span->set_parent_span_id(parent_span_id);
  if (!Share(&impl.name_, name.str())) span->set_name(name.str());
#else
  span->set_trace_id(trace_id);
  span->set_parent_span_id(parent_span_id);
  span->set_name(name.str());
#endif
}

namespace {

// Open addressing over a fixed array, filled at most to half so that probes stay short. Slots
// are only ever filled, never emptied, so a reader needs no lock: a slot seen filled holds a
// key that lives forever.
constexpr std::size_t kInternSlots = 2 * kMaxInternedKeys;
static_assert((kInternSlots & (kInternSlots - 1)) == 0, "a power of two, for the mask");

struct InternTable {
  std::array<std::atomic<const StaticKey*>, kInternSlots> slots{};
  // Keys made; may pass kMaxInternedKeys by the number of threads racing past the check.
  std::atomic<std::size_t> count{0};
};

}  // namespace

const StaticKey* InternKey(std::string_view name) noexcept {
  if (name.size() > kMaxInternedKeyLength) return nullptr;
  static InternTable& table = *new InternTable();  // never destroyed, as its keys
  std::size_t i = std::hash<std::string_view>{}(name) & (kInternSlots - 1);
  for (std::size_t probe = 0; probe < kInternSlots; ++probe, i = (i + 1) & (kInternSlots - 1)) {
    auto& slot = table.slots[i];
    const StaticKey* k = slot.load(std::memory_order_acquire);
    if (k == nullptr) {
      if (table.count.load(std::memory_order_relaxed) >= kMaxInternedKeys) return nullptr;
      const StaticKey* made;
      try {
        made = new StaticKey(name);
      } catch (...) {
        return nullptr;
      }
      if (slot.compare_exchange_strong(k, made, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        table.count.fetch_add(1, std::memory_order_relaxed);
        return made;
      }
      delete made;  // another thread filled the slot first; `k` is its key
    }
    if (k->str() == name) return k;
  }
  return nullptr;
}

bool StaticKeysShared() noexcept {
#ifdef INFERTEL_STATIC_KEYS
  return true;
#else
  return false;
#endif
}

}  // namespace infertel
