#include "core/static_key.h"

#include <google/protobuf/arenastring.h>
#include <google/protobuf/stubs/common.h>

namespace infertel {

// protobuf 3.21 (Debian 12's) keeps a string field as an ArenaStringPtr in the generated
// message's `_impl_`, and lets a "default" value be any string it does not own. The field is
// private: an explicit instantiation may name it (access is not checked there), and hands its
// pointer-to-member out through a friend. Other protobuf versions copy the key.
#if GOOGLE_PROTOBUF_VERSION >= 3021000 && GOOGLE_PROTOBUF_VERSION < 3022000
#define INFERTEL_STATIC_KEYS 1
namespace {
struct KeyValueImpl {};
auto ImplOf(KeyValueImpl);
template <auto Member>
struct ImplAccess {
  friend auto ImplOf(KeyValueImpl) { return Member; }
};
template struct ImplAccess<&KeyValue::_impl_>;
}  // namespace
#endif

void SetKey(KeyValue* kv, const StaticKey& key) {
#ifdef INFERTEL_STATIC_KEYS
  auto& field = (kv->*ImplOf(KeyValueImpl{})).key_;
  if (field.IsDefault() && kv->key().empty()) {
    google::protobuf::internal::TaggedStringPtr shared;
    shared.SetDefault(&key.str());
    field.UnsafeSetTaggedPointer(shared);
    return;
  }
#endif
  kv->set_key(key.str());
}

bool StaticKeysShared() noexcept {
#ifdef INFERTEL_STATIC_KEYS
  return true;
#else
  return false;
#endif
}

}  // namespace infertel
