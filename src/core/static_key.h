#pragma once
// Attribute keys that live as long as the program, which a KeyValue built by the agent (or
// received, InternKey) points at instead of copying; and derived spans pointing at their
// parent's ids (ShareSpanStrings).
//
// Why: most keys of the telemetry model are longer than the 15 characters a std::string holds
// inline, and protobuf keeps a string set on an arena message as a std::string whose
// characters are on the heap. An entry span carried about fifteen such keys: at least fifteen
// allocations on the gateway thread per request, and as many frees on an export lane when the
// span's arena went (docs/performance-history.md, "Attribute strings: one allocation for a long
// string, none for a key").

#include <cstddef>
#include <string>
#include <string_view>

#include "core/telemetry.h"

namespace infertel {

// One key of the model, made once from its semconv constant (Key<> below).
class StaticKey {
 public:
  explicit StaticKey(std::string_view name) : name_(name) {}
  StaticKey(const StaticKey&) = delete;
  StaticKey& operator=(const StaticKey&) = delete;

  const std::string& str() const noexcept { return name_; }

 private:
  const std::string name_;
};

// The StaticKey of a semconv constant: Key<semconv::kGenAiRequestModel>().
// Never destroyed: KeyValues point at it for as long as the process runs, an export at exit
// included.
template <const std::string_view& Name>
const StaticKey& Key() {
  static const StaticKey& key = *new StaticKey(Name);
  return key;
}

// Sets `kv`'s key to `key` without a copy, when `kv`'s key is still unset (a KeyValue just
// added); otherwise copies it. The KeyValue points at the key as protobuf points at a field's
// default value, which it never writes or frees: key(), serialization, parsing, copies and
// set_key() (which makes a new string) behave as with a copied key. Three things do not:
// - reflection reads the key as unset (its default), so code that reads KeyValues by
//   reflection must read the key through key(), as otlp_json's encoder does;
// - Clear() leaves the key as it is, and mutable_key() returns a new, empty key;
// so this is for KeyValues that are then only read, or given a new key by set_key(): the
// agent's own, and received ones (receiver/trace_decoder.h).
void SetKey(KeyValue* kv, const StaticKey& key);

// Sets a span's trace id, parent span id and name as SetKey sets a key: pointing at the
// strings given, for fields still unset (a span just made), and copying them otherwise. The
// ids must stay unchanged as long as the span lives: a derived span's parent's own, on the
// same arena (engines/vllm/vllm_spans.cc's phases). Why: a phase's three strings were three
// string objects on the arena with their destructors in its cleanup list, and the 16-byte
// trace id a heap allocation, three phases per span. The same caveats as SetKey's hold: by
// reflection these fields read as unset (otlp_json's encoder reads them through accessors).
void ShareSpanStrings(Span* span, const std::string& trace_id, const std::string& parent_span_id,
                      const StaticKey& name);

// True when SetKey points at the key (the protobuf this was built with has the layout it
// relies on); false when it copies.
bool StaticKeysShared() noexcept;

// The StaticKey named `name`, made the first time a name is asked for and kept, like Key<>'s,
// for as long as the process runs; null when `name` is longer than kMaxInternedKeyLength or
// kMaxInternedKeys names are already kept (the caller then copies the name). Safe from any
// thread; a name already kept costs a hash and a compare, without a lock.
//
// Why: the receiver decodes every attribute key of every received span (receiver/
// trace_decoder.h). An engine's keys are a few dozen names sent again in every span, most
// longer than 15 characters: as copies they were an allocation each on the receiving thread,
// and a free on the export lane. The bound keeps a sender inventing keys from growing this.
inline constexpr std::size_t kMaxInternedKeys = 2048;
inline constexpr std::size_t kMaxInternedKeyLength = 256;
const StaticKey* InternKey(std::string_view name) noexcept;

// Adds an attribute keyed by a StaticKey; AddAttr (core/telemetry.h) takes one as its key.
template <typename Repeated>
inline KeyValue* AddKey(Repeated* attrs, const StaticKey& key) {
  auto* kv = attrs->Add();
  SetKey(kv, key);
  return kv;
}

}  // namespace infertel
