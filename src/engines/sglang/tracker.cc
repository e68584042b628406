#include "engines/sglang/tracker.h"

#include "core/semconv.h"
#include "core/static_key.h"
#include "engines/sglang/sglang_spans.h"

namespace infertel::engines::sglang {
namespace sc = semconv;

namespace {

// A dropped span's parent or link may itself have been dropped (a level-1 stage links back
// past two level-2 stages): the chain is followed this many hops at most.
constexpr int kMaxHops = 8;

std::string TraceKey(const TraceId& t) { return std::string(AsBytes(t)); }

}  // namespace

template <typename V>
V* Tracker::Table<V>::Find(const std::string& key, Clock::time_point now) {
  auto it = map.find(key);
  if (it == map.end() || it->second.expires <= now) return nullptr;
  return &it->second.value;
}

template <typename V>
V& Tracker::Table<V>::Put(const std::string& key, V value, Clock::time_point expires) {
  Entry& e = map[key];
  e.value = std::move(value);
  e.expires = expires;
  e.gen = ++next_gen;
  order.emplace_back(expires, key, e.gen);
  // Bounded: the oldest entries go first.
  while ((map.size() > max || order.size() > 4 * max + 16) && !order.empty()) {
    auto& [t, k, g] = order.front();
    auto old = map.find(k);
    if (old != map.end() && old->second.gen == g && k != key) {
      map.erase(old);
      ++evicted;  // live, where the caller purged what had expired first (OnRequestStarted)
    }
    order.pop_front();
  }
  return map[key].value;
}

template <typename V>
void Tracker::Table<V>::Touch(const std::string& key, Clock::time_point expires) {
  auto it = map.find(key);
  if (it == map.end()) return;
  it->second.expires = expires;
  it->second.gen = ++next_gen;
  order.emplace_back(expires, key, it->second.gen);
}

template <typename V>
void Tracker::Table<V>::Purge(Clock::time_point now) {
  while (!order.empty()) {
    auto& [t, k, g] = order.front();
    auto it = map.find(k);
    const bool stale = it == map.end() || it->second.gen != g;
    if (!stale && t > now) break;
    if (!stale) map.erase(it);
    order.pop_front();
  }
}

Tracker::Tracker(TrackerOptions options) : options_(options) {
  levels_.max = options_.max_requests;
  dropped_.max = options_.max_dropped;
  rooms_.max = options_.max_rooms;
}

std::size_t Tracker::OnRequestStarted(const TraceId& trace, int level, std::string_view tenant,
                                      Clock::time_point now) {
  std::lock_guard lock(mu_);
  levels_.Purge(now);
  const std::uint64_t before = levels_.evicted;
  levels_.Put(TraceKey(trace), Request{level, std::string(tenant)},
              now + options_.open_request_ttl);
  return static_cast<std::size_t>(levels_.evicted - before);
}

void Tracker::OnRequestFinished(const TraceId& trace, Clock::time_point now) {
  std::lock_guard lock(mu_);
  levels_.Touch(TraceKey(trace), now + options_.request_ttl);
}

std::optional<int> Tracker::LevelOf(const TraceId& trace, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (const Request* r = levels_.Find(TraceKey(trace), now)) return r->level;
  return std::nullopt;
}

std::size_t Tracker::requests() const {
  std::lock_guard lock(mu_);
  return levels_.map.size();
}

std::size_t Tracker::rooms() const {
  std::lock_guard lock(mu_);
  return rooms_.map.size();
}

const Tracker::Dropped* Tracker::FindDropped(const std::string& span_id, Clock::time_point now) {
  return dropped_.Find(span_id, now);
}

// Pass 1 for one span: the level of its request decides whether it stays (false: dropped, and
// remembered with what it pointed at); events above the level leave a kept span.
bool Tracker::LevelSpan(Span& s, int current_level, Clock::time_point now, ProcessResult* r) {
  int level = current_level;
  const Request* request = levels_.Find(s.trace_id(), now);
  if (request != nullptr) level = request->level;
  bool k = level > 0;  // level 0: SGLang makes no native span at all
  if (k && Classify(s) == SpanRole::kStage) k = *StageLevel(s.name()) <= level;
  if (!k) {
    ++r->dropped;
    if (level > 0 && !s.span_id().empty()) {
      Dropped d{s.trace_id(), s.parent_span_id(), {}};
      for (const auto& l : s.links())
        d.links.push_back({l.trace_id(), l.span_id(), l.trace_state()});
      dropped_.Put(s.span_id(), std::move(d), now + options_.dropped_ttl);
    }
    return false;
  }
  if (request != nullptr && !request->tenant.empty() && Classify(s) == SpanRole::kRequest)
    AddAttr(s.mutable_attributes(), sc::kInfertelTenant, request->tenant);
  auto* events = s.mutable_events();
  int kept_events = 0;
  for (int e = 0; e < events->size(); ++e) {
    auto el = EventLevel(events->Get(e).name());
    if (el && *el > level) {
      ++r->events_dropped;
      continue;
    }
    if (kept_events != e) events->SwapElements(kept_events, e);
    ++kept_events;
  }
  while (events->size() > kept_events) events->RemoveLast();
  // Each `retract` sent the request back to the waiting queue: a preemption, which SGLang
  // reports per request this way only. Counted on the span, for the latency cause
  // `preemption` (analytics/explain.h).
  std::int64_t retracts = 0;
  for (const auto& e : *events) retracts += e.name() == sc::kSglEventRetract ? 1 : 0;
  if (retracts > 0) AddAttr(s.mutable_attributes(), Key<sc::kInfertelPreemptions>(), retracts);
  return true;
}

// Pass 2 for one kept span: a parent or link that pointed at a dropped span points where it
// pointed.
void Tracker::Reattach(Span& s, Clock::time_point now, ProcessResult* r) {
  for (int hop = 0; hop < kMaxHops && !s.parent_span_id().empty(); ++hop) {
    const Dropped* d = FindDropped(s.parent_span_id(), now);
    if (!d || d->trace_id != s.trace_id()) break;
    s.set_parent_span_id(d->parent_span_id);
    ++r->reattached;
  }
  bool relink = false;
  for (const auto& l : s.links()) {
    const Dropped* d = FindDropped(l.span_id(), now);
    if (d && d->trace_id == l.trace_id()) relink = true;
  }
  if (!relink) return;
  google::protobuf::RepeatedPtrField<Span::Link> links;
  for (const auto& l : s.links()) {
    // Depth-first over the chain of dropped spans, keeping each end that was not dropped.
    std::vector<std::pair<Link, int>> work{{{l.trace_id(), l.span_id(), l.trace_state()}, 0}};
    bool moved = false;
    while (!work.empty()) {
      auto [cur, depth] = std::move(work.back());
      work.pop_back();
      const Dropped* d = depth < kMaxHops ? FindDropped(cur.span_id, now) : nullptr;
      if (d && d->trace_id == cur.trace_id) {
        moved = true;
        for (auto it = d->links.rbegin(); it != d->links.rend(); ++it)
          work.push_back({*it, depth + 1});
        continue;
      }
      Span::Link* nl = links.Add();
      *nl = l;
      nl->set_trace_id(cur.trace_id);
      nl->set_span_id(cur.span_id);
      nl->set_trace_state(cur.trace_state);
    }
    if (moved) ++r->reattached;
  }
  *s.mutable_links() = std::move(links);
}

// Pass 3 for one kept span: PD request spans meet through bootstrap_room.
void Tracker::LinkPdPeer(Span& s, Clock::time_point now, ProcessResult* r) {
  std::string_view role = RequestRole(s.name());
  if (role.empty() || Classify(s) != SpanRole::kRequest) return;
  auto room = BootstrapRoom(s);
  if (!room) return;
  Room* rm = rooms_.Find(*room, now);
  if (!rm) rm = &rooms_.Put(*room, Room{}, now + options_.pd_window);
  const bool prefill = role == sc::kSglRolePrefill;
  Peer& self = prefill ? rm->prefill : rm->decode;
  const Peer& other = prefill ? rm->decode : rm->prefill;
  if (other.present && other.span_id != s.span_id()) {
    Span::Link* l = s.add_links();
    l->set_trace_id(other.trace_id);
    l->set_span_id(other.span_id);
    AddAttr(l->mutable_attributes(), sc::kSglBootstrapRoom, *room);
    AddAttr(l->mutable_attributes(), sc::kInfertelPdPeerRole,
            prefill ? sc::kSglRoleDecode : sc::kSglRolePrefill);
    ++r->pd_links;
  }
  self = {s.trace_id(), s.span_id(), true};
}

ProcessResult Tracker::Process(google::protobuf::RepeatedPtrField<Span>* spans, int current_level,
                               Clock::time_point now) {
  ProcessResult r;
  const int n = spans->size();
  std::vector<bool> keep(static_cast<std::size_t>(n), true);
  std::lock_guard lock(mu_);
  levels_.Purge(now);
  dropped_.Purge(now);
  rooms_.Purge(now);

  // Pass 1: the level of each span's request decides whether it stays; a dropped span is
  // remembered with what it pointed at. Events above the level leave the kept spans.
  for (int i = 0; i < n; ++i) {
    if (!LevelSpan(*spans->Mutable(i), current_level, now, &r))
      keep[static_cast<std::size_t>(i)] = false;
  }

  // Pass 2: parents and links that pointed at a dropped span point where it pointed.
  for (int i = 0; i < n; ++i) {
    if (!keep[static_cast<std::size_t>(i)]) continue;
    Reattach(*spans->Mutable(i), now, &r);
  }

  // Pass 3: PD request spans meet through bootstrap_room.
  for (int i = 0; i < n; ++i) {
    if (!keep[static_cast<std::size_t>(i)]) continue;
    LinkPdPeer(*spans->Mutable(i), now, &r);
  }

  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (!keep[static_cast<std::size_t>(i)]) continue;
    if (kept != i) spans->SwapElements(kept, i);
    ++kept;
  }
  // Deleted, not RemoveLast()ed: protobuf keeps removed elements for reuse by a later Add(),
  // which must not hand out a span a view only borrows (pipeline/held.h). On an arena this
  // only unlinks them.
  spans->DeleteSubrange(kept, spans->size() - kept);
  r.kept = static_cast<std::size_t>(kept);
  return r;
}

}  // namespace infertel::engines::sglang
