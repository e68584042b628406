#include "metrics/service.h"

#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "core/thread_name.h"
#include "engines/registry.h"
#include "http/sync_client.h"
#include "http/url.h"
#include "metrics/exposition.h"
#include "scrape/prometheus_text.h"

namespace infertel::metrics {
namespace {

// The parse keeps this many samples per series allowed (ScrapeLimits::max_series): a series
// the tables read comes from one sample, or a few summed; anything past it is refused.
constexpr std::size_t kSamplesPerSeries = 4;

}  // namespace

struct MetricsService::Target {
  ScrapeTarget config;
  std::optional<http::Url> url;
  std::unique_ptr<http::SyncClient> client;  // scrape thread only
  std::unique_ptr<ScrapedSeries> series;     // scrape thread only
  ScrapeStats stats;
  std::chrono::steady_clock::time_point refused_logged;  // scrape thread only
  mutable std::mutex mu;
  std::string last_error;  // guarded by mu
  bool was_ok = true;      // scrape thread only: log state changes once, not every scrape
};

MetricsService::MetricsService(MetricsOptions options, std::vector<ScrapeTarget> targets,
                               std::shared_ptr<config::ConfigStore> config,
                               pipeline::MetricSink* sink, Resource resource, std::string version)
    : options_(options),
      config_(std::move(config)),
      sink_(sink),
      resource_(std::move(resource)),
      version_(std::move(version)),
      request_metrics_(&store_, config_, options_.model_bound, &histograms_, &slo_, &overview_,
                       &genai_),
      start_unix_nano_(WallNanos()) {
  for (auto& tc : targets) {
    auto t = std::make_unique<Target>();
    store_.AddSource(tc.upstream, tc.engine);
    request_metrics_.AddUpstream(tc.upstream);
    t->series = std::make_unique<ScrapedSeries>(options_.scrape_limits);
    if (!tc.url.empty()) {
      t->url = http::ParseUrl(tc.url);
      if (!t->url) spdlog::warn("metrics: upstream {}: bad metrics URL '{}'", tc.upstream, tc.url);
    }
    http::SyncTimeouts to;
    to.connect = to.write = to.read = options_.scrape_timeout;
    t->client = std::make_unique<http::SyncClient>(to);
    t->config = std::move(tc);
    targets_.push_back(std::move(t));
  }
}

MetricsService::~MetricsService() { Stop(); }

void MetricsService::Start() {
  bool any_scrape = false;
  for (const auto& t : targets_) any_scrape |= t->url.has_value();
  if (any_scrape)
    threads_.emplace_back([this] {
      NameThisThread("metrics-scrape");
      Loop(options_.scrape_interval, &MetricsService::ScrapeOnce);
    });
  threads_.emplace_back([this] {
    NameThisThread("metrics-overview");
    Loop(options_.overview_step, &MetricsService::RecordOverview);
  });
  if (sink_)
    threads_.emplace_back([this] {
      NameThisThread("metrics-export");
      // As the OpenTelemetry SDKs' periodic reader does: the first export one interval after
      // the start (an export at once held only what the first scrape happened to beat it to),
      // and a last one at Stop().
      Loop(options_.export_interval, &MetricsService::ExportOnce, /*wait_first=*/true);
    });
}

void MetricsService::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  if (sink_) ExportOnce();
}

void MetricsService::Loop(std::chrono::milliseconds interval, void (MetricsService::*fn)(),
                          bool wait_first) {
  std::unique_lock lock(mu_);
  if (wait_first) cv_.wait_for(lock, interval, [this] { return stopping_; });
  while (!stopping_) {
    lock.unlock();
    (this->*fn)();
    lock.lock();
    cv_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

std::vector<MetricPoint> MetricsService::Snapshot() const {
  auto settings = config_->Current();
  return store_.Snapshot(
      [&](std::string_view, EngineId engine) { return MetricsEnabled(*settings, engine); });
}

std::vector<MetricPoint> MetricsService::ExposedPoints(GenAiDialect dialect) const {
  auto points = Snapshot();
  if (SpeaksModel(dialect)) return points;
  std::erase_if(points, [](const MetricPoint& p) { return !Family(p.id).replaced_by.empty(); });
  return points;
}

std::string MetricsService::RenderPrometheus(bool exemplars) const {
  const GenAiDialect dialect = config::GenAiDialectIn(*config_->Current());
  std::string out = metrics::RenderPrometheus(ExposedPoints(dialect));
  out += histograms_.RenderPrometheus(exemplars);
  out += slo_.RenderPrometheus(static_cast<std::int64_t>(WallNanos() / 1'000'000'000));
  if (SpeaksLatest(dialect)) out += genai_.RenderPrometheus();
  return out;
}

void MetricsService::ExportOnce() {
  if (!sink_) return;
  const GenAiDialect dialect = config::GenAiDialectIn(*config_->Current());
  auto points = ExposedPoints(dialect);
  const std::uint64_t now = WallNanos();
  MetricsRequest req = BuildOtlpMetrics(points, resource_, start_unix_nano_, now, version_);
  if (req.resource_metrics_size() == 0) {  // no series of the seed's families yet
    auto* rm = req.add_resource_metrics();
    *rm->mutable_resource() = resource_;
    auto* sm = rm->add_scope_metrics();
    sm->mutable_scope()->set_name("infertel");
    sm->mutable_scope()->set_version(version_);
  }
  auto* sm = req.mutable_resource_metrics(0)->mutable_scope_metrics(0);
  histograms_.AppendOtlp(sm, start_unix_nano_, now);
  slo_.AppendOtlp(sm, start_unix_nano_, now);
  if (SpeaksLatest(dialect)) genai_.AppendOtlp(sm, start_unix_nano_, now);
  if (sm->metrics_size() == 0) return;
  sink_->Submit(std::move(req));
}

EngineState MetricsService::ReadEngineState(const Target& t,
                                            const config::Settings& settings) const {
  const auto families = engines::Profile(t.config.engine).state_families();
  const auto points = store_.Snapshot([&](std::string_view source, EngineId engine) {
    return source == t.config.upstream && MetricsEnabled(settings, engine);
  });
  // The sum over a family's series (engines of one upstream, their labels), of the first
  // family of `ids` that has one.
  auto read = [&](const std::vector<MetricId>& ids) -> std::optional<double> {
    for (MetricId id : ids) {
      std::optional<double> sum;
      for (const MetricPoint& p : points)
        if (p.id == id) sum = sum.value_or(0) + p.value;
      if (sum) return sum;
    }
    return std::nullopt;
  };
  EngineState e{read(families.kv_cache_usage), read(families.running), read(families.waiting),
                read(families.preemptions), std::nullopt};
  if (families.scrapes) e.scrapes = read({*families.scrapes});
  return e;
}

void MetricsService::RecordOverview() {
  OverviewReading r;
  overview_.AddRequestCounts(&r);
  const std::array<std::pair<Latency, Buckets KeyTotals::*>, 3> latencies{
      {{Latency::kTimeToFirstToken, &KeyTotals::ttft},
       {Latency::kInterToken, &KeyTotals::itl},
       {Latency::kRequestDuration, &KeyTotals::e2e}}};
  for (const auto& [id, field] : latencies)
    for (const auto& [key, counts] : histograms_.Totals(id)) r.keys[key].*field = counts;
  for (const auto& [key, t] : slo_.AllTotals()) {
    KeyTotals& k = r.keys[key];
    k.slo_judged = t.judged;
    k.slo_met = t.met;
    k.goodput_tokens = t.goodput_tokens;
  }
  auto settings = config_->Current();
  for (const auto& t : targets_) r.upstreams[t->config.upstream] = ReadEngineState(*t, *settings);
  overview_.Record(static_cast<std::int64_t>(WallNanos() / 1'000'000), std::move(r));
}

std::string MetricsService::OverviewJson(std::int64_t since_unix_ms) const {
  const auto step_s = std::chrono::duration_cast<std::chrono::seconds>(options_.overview_step);
  return overview_.Json(since_unix_ms, static_cast<int>(std::max<std::int64_t>(1, step_s.count())));
}

void MetricsService::ScrapeOnce() {
  auto settings = config_->Current();
  for (auto& t : targets_) {
    if (!t->url) continue;
    ScrapeTarget_(*t, *settings);
  }
}

void MetricsService::ScrapeTarget_(Target& t, const config::Settings& settings) {
  const std::string& name = t.config.upstream;
  auto fail = [&](std::string why) {
    t.stats.failures.fetch_add(1, std::memory_order_relaxed);
    // Gauges of an engine that cannot be read are gone, not frozen at their last value.
    store_.ReplaceGauges(name, {});
    if (t.was_ok)
      spdlog::warn("metrics: upstream {}: scrape of {} failed: {}", name, t.url->ToString(), why);
    t.was_ok = false;
    std::lock_guard lock(t.mu);
    t.last_error = std::move(why);
  };
  if (!MetricsEnabled(settings, t.config.engine)) {
    store_.ReplaceGauges(name, {});
    return;
  }
  t.stats.scrapes.fetch_add(1, std::memory_order_relaxed);
  http::SyncResponse resp;
  std::string error;
  // Plain 0.0.4 text: every engine serves it, and it is what the parser reads best.
  if (!t.client->Send("GET", *t.url, {{"Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1"}}, "", "",
                      &resp, &error, 64u << 20)) {
    t.client->Close();
    return fail(error);
  }
  if (resp.status != 200) {
    // An engine started without its metrics may have no /metrics route: a 404 here is the
    // normal state of such an engine, and the gateway's own measurements carry on.
    return fail("HTTP " + std::to_string(resp.status));
  }
  scrape::ParseOptions popts;
  if (const std::string* ct = resp.Header("content-type"))
    popts.openmetrics = ct->find("openmetrics") != std::string::npos;
  // Only the families the engine's table reads, and a bounded number of their samples: what a
  // target serves beyond them costs a scan, not memory.
  const engines::EngineProfile& engine = engines::Profile(t.config.engine);
  popts.keep_family = [&engine](std::string_view f) { return engine.ReadsFamily(f); };
  popts.keep_sample = [&engine](std::string_view s) { return engine.ReadsSample(s); };
  popts.max_samples = kSamplesPerSeries * options_.scrape_limits.max_series;
  scrape::ParseResult parsed = scrape::ParsePrometheusText(resp.body, popts);
  resp.body = std::string();  // the parse holds copies; the body can be large
  if (parsed.malformed_lines > 0) {
    t.stats.malformed_lines.fetch_add(parsed.malformed_lines, std::memory_order_relaxed);
    spdlog::debug("metrics: upstream {}: {} malformed lines skipped (first: {})", name,
                  parsed.malformed_lines, parsed.errors.empty() ? "" : parsed.errors.front());
  }
  engines::ScrapedMetrics scraped = engine.TranslateScrape(parsed, t.config.generation_hint);
  if (engine.scrape_mode() == engines::ScrapeMode::kSnapshot) {
    CountRefused(t, {}, parsed.samples_over_limit, scraped.invalid_values);
    t.stats.series.store(scraped.snapshot.size(), std::memory_order_relaxed);
    if (!scraped.snapshot.empty()) store_.Add(name, scraped.snapshot);
  } else {
    StoreCumulative(t, parsed.samples_over_limit, std::move(scraped));
  }
  if (!t.was_ok) spdlog::info("metrics: upstream {}: scraping {} again", name, t.url->ToString());
  t.was_ok = true;
  std::lock_guard lock(t.mu);
  t.last_error.clear();
}

void MetricsService::StoreCumulative(Target& t, std::size_t samples_over_limit,
                                     engines::ScrapedMetrics translated) {
  const ScrapeUpdate u =
      t.series->Update(translated.counters, &translated.gauges, ScrapedSeries::Clock::now());
  if (u.resets > 0) {
    t.stats.counter_resets.fetch_add(u.resets, std::memory_order_relaxed);
    spdlog::info(
        "metrics: upstream {}: {} engine counters went back (engine restarted); totals "
        "carried over",
        t.config.upstream, u.resets);
  }
  CountRefused(t, u, samples_over_limit, translated.invalid_values);
  store_.ReplaceScrapedCounters(t.config.upstream, t.series->CounterTotals());
  store_.ReplaceGauges(t.config.upstream, std::move(translated.gauges));
  t.stats.series.store(t.series->size(), std::memory_order_relaxed);
}

void MetricsService::CountRefused(Target& t, const ScrapeUpdate& u, std::size_t over_sample_limit,
                                  std::size_t invalid_values) {
  constexpr auto relaxed = std::memory_order_relaxed;
  t.stats.over_series_limit.fetch_add(u.over_limit, relaxed);
  t.stats.over_sample_limit.fetch_add(over_sample_limit, relaxed);
  t.stats.invalid_values.fetch_add(invalid_values, relaxed);
  t.stats.expired_series.fetch_add(u.expired, relaxed);
  if (u.over_limit + over_sample_limit + invalid_values == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - t.refused_logged < std::chrono::minutes(1)) return;  // the counters have the rest
  t.refused_logged = now;
  spdlog::warn(
      "metrics: upstream {}: samples refused in one scrape: {} new series beyond "
      "--scrape-max-series {}, {} past the sample limit {}, {} with a NaN, infinite or negative "
      "counter value (logged at most once a minute; see infertel_scrape_refused_samples_total)",
      t.config.upstream, u.over_limit, options_.scrape_limits.max_series, over_sample_limit,
      kSamplesPerSeries * options_.scrape_limits.max_series, invalid_values);
}

void MetricsService::SetServedModels(std::string_view upstream,
                                     const std::vector<std::string>& models) {
  request_metrics_.Models(upstream).SetKnown(models);
}

std::string MetricsService::LastError(std::string_view upstream) const {
  for (const auto& t : targets_) {
    if (t->config.upstream != upstream) continue;
    std::lock_guard lock(t->mu);
    return t->last_error;
  }
  return {};
}

void MetricsService::RegisterStats(StatsRegistry* stats) {
  using T = StatsRegistry::Type;
  stats->AddFn("infertel_latency_observations_dropped",
               "Latency observations dropped: their histogram series would pass the bound",
               T::kCounter, "", [this] { return static_cast<double>(histograms_.dropped()); });
  stats->AddFn("infertel_genai_observations_dropped",
               "Observations of the GenAI conventions' histograms dropped: their series would "
               "pass the bound",
               T::kCounter, "", [this] { return static_cast<double>(genai_.dropped()); });
  stats->AddFn("infertel_overview_values_dropped",
               "Values of the web UI's overview not kept, and requests not counted in it: their "
               "series would pass the bound",
               T::kCounter, "", [this] { return static_cast<double>(overview_.dropped()); });
  stats->AddFn("infertel_slo_verdicts_dropped",
               "SLO verdicts not counted: their (model, tenant) series would pass the bound",
               T::kCounter, "", [this] { return static_cast<double>(slo_.dropped()); });
  for (const auto& t : targets_) {
    if (!t->url) continue;
    std::string labels = StatsLabel("upstream", t->config.upstream);
    stats->Add("infertel_scrapes", "Scrapes of an engine's /metrics", T::kCounter, labels,
               &t->stats.scrapes);
    stats->Add("infertel_scrape_failures",
               "Scrapes that failed (transport error, timeout or non-200)", T::kCounter, labels,
               &t->stats.failures);
    stats->Add("infertel_scrape_malformed_lines", "Lines of engine /metrics skipped as malformed",
               T::kCounter, labels, &t->stats.malformed_lines);
    stats->Add("infertel_scrape_engine_restarts",
               "Engine counter series that went back (engine restarts); totals carried over",
               T::kCounter, labels, &t->stats.counter_resets);
    const std::pair<const char*, const std::atomic<std::uint64_t>*> refused[] = {
        {"series_limit", &t->stats.over_series_limit},
        {"sample_limit", &t->stats.over_sample_limit},
        {"invalid_value", &t->stats.invalid_values}};
    for (const auto& [reason, value] : refused)
      stats->Add("infertel_scrape_refused_samples",
                 "Scraped samples refused: a new series beyond --scrape-max-series, past the "
                 "sample limit, or a NaN/infinite/negative-counter value",
                 T::kCounter, labels + ",reason=\"" + reason + "\"", value);
    stats->Add("infertel_scrape_expired_series",
               "Scraped counter series forgotten after --scrape-stale-after without a sample",
               T::kCounter, labels, &t->stats.expired_series);
    stats->Add("infertel_scrape_series", "Series kept for the target after its latest scrape",
               T::kGauge, labels, &t->stats.series);
  }
  RegisterModelStats(stats);
}

void MetricsService::RegisterModelStats(StatsRegistry* stats) {
  using T = StatsRegistry::Type;
  for (const auto& t : targets_) {
    const BoundedLabelValues& models = request_metrics_.Models(t->config.upstream);
    std::string labels = StatsLabel("upstream", t->config.upstream) + ",label=\"model\"";
    const char* help =
        "Label values folded into \"other\": beyond the cap of values the engine does not "
        "serve, or too long";
    stats->Add("infertel_metric_label_folded", help, T::kCounter, labels + ",reason=\"cap\"",
               &models.folded().cap);
    stats->Add("infertel_metric_label_folded", help, T::kCounter, labels + ",reason=\"length\"",
               &models.folded().length);
    stats->AddFn("infertel_metric_label_values",
                 "Label values admitted beyond those the engine serves (at most the cap)",
                 T::kGauge, labels, [&models] { return double(models.admitted()); });
    stats->AddFn("infertel_metric_label_known_values",
                 "Label values the engine serves (GET /v1/models), never folded", T::kGauge, labels,
                 [&models] { return double(models.known()); });
  }
}

}  // namespace infertel::metrics
