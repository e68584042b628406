#include "analytics/slo.h"

#include <simdjson.h>

#include "core/semconv.h"

namespace infertel::analytics {
namespace {

using openai::Outcome;
constexpr double kNs = 1e9;

std::optional<std::int64_t> IntOf(const config::Settings& s, config::Key k) {
  if (!s.IsSet(k)) return std::nullopt;
  return s.GetInt(k);
}

}  // namespace

SloPolicy::SloPolicy(const config::Settings& s) {
  using config::Key;
  general_ = {IntOf(s, Key::kSloTtftMs), IntOf(s, Key::kSloTpotMs), IntOf(s, Key::kSloE2eMs)};
  const std::string_view table = s.GetString(Key::kSloModels);
  if (table.empty()) return;
  // The text is canonical JSON (config::ParseValue checked it): read it as such.
  simdjson::dom::parser parser;
  simdjson::dom::object rows;
  if (parser.parse(table.data(), table.size()).get(rows)) return;
  for (auto row : rows) {
    Objectives o = general_;
    simdjson::dom::object fields;
    if (row.value.get(fields)) continue;
    for (auto f : fields) {
      std::int64_t v = 0;
      if (f.value.get(v)) continue;
      if (f.key == "ttft-ms") o.ttft_ms = v;
      if (f.key == "tpot-ms") o.tpot_ms = v;
      if (f.key == "e2e-ms") o.e2e_ms = v;
    }
    by_model_.emplace(std::string(row.key), o);
  }
}

const Objectives& SloPolicy::For(std::string_view model) const {
  auto it = by_model_.find(model);
  return it == by_model_.end() ? general_ : it->second;
}

// Whether the request was the server's to serve: refused by the gateway, a client's mistake
// (a 4xx from the engine) or given up by its client are not.
bool ServersToServe(const openai::Exchange& ex) {
  switch (ex.outcome) {
    case Outcome::kRejected:
    case Outcome::kClientAborted:
      return false;
    case Outcome::kEngineError:
      return !(ex.http_status >= 400 && ex.http_status < 500);
    default:
      return true;
  }
}

MeasuredLatency MeasureLatency(const openai::Exchange& ex) {
  MeasuredLatency m;
  const std::uint64_t start = ex.start.mono_start_ns, first = ex.first_token_mono_ns;
  if (ex.end_mono_ns > start) m.e2e_s = (ex.end_mono_ns - start) / kNs;
  if (first > start) m.ttft_s = (first - start) / kNs;
  const auto output = ex.response.usage.output_tokens;
  if (first > start && ex.delta_times.last_mono_ns > first && output && *output > 1)
    m.tpot_s = (ex.delta_times.last_mono_ns - first) / kNs / static_cast<double>(*output - 1);
  return m;
}

openai::SloVerdict Judge(const openai::Exchange& ex, const Objectives& o) {
  openai::SloVerdict v;
  if (o.empty() || !ServersToServe(ex)) return v;
  v.judged = true;
  const MeasuredLatency m = MeasureLatency(ex);
  auto over = [](std::optional<double> s, std::optional<std::int64_t> ms) {
    return s && ms && *s * 1000.0 > static_cast<double>(*ms);
  };
  if (ex.streamed && over(m.ttft_s, o.ttft_ms)) v.missed |= openai::kSloMissTtft;
  if (ex.streamed && over(m.tpot_s, o.tpot_ms)) v.missed |= openai::kSloMissTpot;
  if (over(m.e2e_s, o.e2e_ms)) v.missed |= openai::kSloMissE2e;
  if (ex.outcome != Outcome::kOk) v.missed |= openai::kSloMissError;
  return v;
}

std::vector<std::string_view> MissedNames(std::uint8_t missed) {
  namespace sc = semconv;
  std::vector<std::string_view> out;
  if (missed & openai::kSloMissTtft) out.push_back(sc::kSloObjectiveTtft);
  if (missed & openai::kSloMissTpot) out.push_back(sc::kSloObjectiveTpot);
  if (missed & openai::kSloMissE2e) out.push_back(sc::kSloObjectiveE2e);
  if (missed & openai::kSloMissError) out.push_back(sc::kSloObjectiveError);
  return out;
}

void AttainmentWindows::Add(const std::string& model, const std::string& tenant, bool met,
                            std::int64_t now_unix_s) {
  const std::int64_t epoch = now_unix_s / kSlotSeconds;
  std::lock_guard lock(mu_);
  auto key = std::make_pair(model, tenant);
  auto it = series_.find(key);
  if (it == series_.end()) {
    if (series_.size() >= max_series_) {
      ++dropped_;
      return;
    }
    it = series_.emplace(std::move(key), Series{}).first;
  }
  Slot& slot = it->second[static_cast<std::size_t>(epoch) % kSlots];
  if (slot.epoch != epoch) slot = Slot{epoch, 0, 0};
  ++slot.judged;
  if (met) ++slot.met;
}

std::vector<AttainmentWindows::Point> AttainmentWindows::Read(std::int64_t now_unix_s) const {
  const std::int64_t epoch = now_unix_s / kSlotSeconds;
  std::vector<Point> out;
  std::lock_guard lock(mu_);
  for (const auto& [key, slots] : series_) {
    for (const Window& w : kWindows) {
      std::uint64_t met = 0, judged = 0;
      // The window's slots: the current one and those before it, w.seconds in all.
      const std::int64_t oldest = epoch - w.seconds / kSlotSeconds + 1;
      for (const Slot& s : slots) {
        if (s.epoch < oldest || s.epoch > epoch) continue;
        met += s.met;
        judged += s.judged;
      }
      if (judged == 0) continue;
      out.push_back({key.first, key.second, w.name,
                     static_cast<double>(met) / static_cast<double>(judged), judged});
    }
  }
  return out;
}

std::uint64_t AttainmentWindows::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

}  // namespace infertel::analytics
