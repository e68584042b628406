// The store's metrics: the latest point of every series, in DIR/metrics.db, at most
// StoreOptions::max_series series.
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "core/semconv.h"
#include "export/sqlite/paced_vfs.h"
#include "export/sqlite/sqlite_store.h"
#include "export/sqlite/store_health.h"
#include "export/sqlite/store_internal.h"
#include "otlp/json_util.h"

namespace infertel::exporting {

using namespace store_internal;

namespace {

// The table `infertel metrics` reads (docs/store.md).
constexpr const char* kMetricsSchema = R"sql(
CREATE TABLE IF NOT EXISTS metrics (
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  unit TEXT NOT NULL,
  labels TEXT NOT NULL,
  value REAL,
  count INTEGER,
  data TEXT,
  time_unix_nano INTEGER NOT NULL,
  resource TEXT NOT NULL,
  service_name TEXT NOT NULL,
  PRIMARY KEY (name, labels)
);
)sql";

constexpr const char* kUpsertMetric =
    "INSERT INTO metrics (name, type, unit, labels, value, count, data, time_unix_nano, resource, "
    "service_name) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (name, labels) DO UPDATE SET "
    "type = excluded.type, unit = excluded.unit, value = excluded.value, count = excluded.count, "
    "data = excluded.data, time_unix_nano = excluded.time_unix_nano, resource = excluded.resource, "
    "service_name = excluded.service_name WHERE excluded.time_unix_nano >= metrics.time_unix_nano";

void BindText(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
void BindU64(sqlite3_stmt* s, int i, std::uint64_t v) {
  sqlite3_bind_int64(s, i, static_cast<sqlite3_int64>(v));
}

std::string MetricsServiceName(const Resource& r) {
  const AnyValue* v = FindAttr(r.attributes(), semconv::kServiceName);
  return v != nullptr && v->has_string_value() ? v->string_value() : std::string();
}

std::uint64_t SeriesHash(std::string_view name, std::string_view labels) {
  return std::hash<std::string_view>()(name) * 31 + std::hash<std::string_view>()(labels);
}

// Labels with sorted keys, so that one series always has one primary key.
std::string SortedLabels(const google::protobuf::RepeatedPtrField<KeyValue>& attrs) {
  std::vector<const KeyValue*> v;
  for (const auto& kv : attrs) v.push_back(&kv);
  std::stable_sort(v.begin(), v.end(),
                   [](const KeyValue* a, const KeyValue* b) { return a->key() < b->key(); });
  std::string out = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out.push_back(',');
    otlp_json::AppendString(&out, v[i]->key());
    out.push_back(':');
    otlp_json::AppendPlainValue(&out, v[i]->value());
  }
  out.push_back('}');
  return out;
}

bool IsMetricsBusy(int rc) {
  rc &= 0xff;
  return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

// Runs `body` inside BEGIN IMMEDIATE .. COMMIT, rolling back on failure.
template <typename Body>
bool InTransaction(sqlite3* db, std::string* error, bool* busy, Body&& body) {
  if (busy) *busy = false;
  int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) {
    rc = body();
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  if (rc != SQLITE_OK) {
    if (busy) *busy = IsMetricsBusy(rc);
    *error = fmt::format("store metrics: {}", sqlite3_errmsg(db));
    LogStoreProblem(*error);
    return false;
  }
  return true;
}

int StepRow(sqlite3_stmt* s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  PaceBetweenRows();
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

}  // namespace

bool SqliteStore::OpenMetrics(std::string* error) {
  const std::string path = MetricsFilePath(options_.path);
  if (sqlite3_open_v2(path.c_str(), &metrics_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      PacedVfsName()) != SQLITE_OK) {
    *error = fmt::format("open {}: {}", path, sqlite3_errmsg(metrics_));
    return false;
  }
  sqlite3_busy_timeout(metrics_, 5000);
  const std::string pragmas = fmt::format(
      "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
      "PRAGMA wal_autocheckpoint=64; PRAGMA journal_size_limit={};",
      WalLimit());
  char* msg = nullptr;
  if (sqlite3_exec(metrics_, (pragmas + kMetricsSchema).c_str(), nullptr, nullptr, &msg) !=
          SQLITE_OK ||
      sqlite3_prepare_v3(metrics_, kUpsertMetric, -1, SQLITE_PREPARE_PERSISTENT, &upsert_metric_,
                         nullptr) != SQLITE_OK) {
    *error = fmt::format("store {}: {}", path, msg ? msg : sqlite3_errmsg(metrics_));
    sqlite3_free(msg);
    return false;
  }
  return LoadSeries(error);
}

bool SqliteStore::LoadSeries(std::string* error) {
  series_.clear();
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(metrics_, "SELECT name, labels FROM metrics", -1, &s, nullptr) !=
      SQLITE_OK) {
    *error = fmt::format("store metrics: {}", sqlite3_errmsg(metrics_));
    return false;
  }
  auto text = [&](int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
    return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s, i)))
             : std::string_view();
  };
  while (sqlite3_step(s) == SQLITE_ROW) series_.insert(SeriesHash(text(0), text(1)));
  sqlite3_finalize(s);
  return true;
}

std::int64_t SqliteStore::DeleteOldMetrics(std::int64_t before_unix_nano) {
  sqlite3_stmt* s = nullptr;
  std::int64_t n = 0;
  if (sqlite3_prepare_v2(metrics_, "DELETE FROM metrics WHERE time_unix_nano < ?1", -1, &s,
                         nullptr) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, before_unix_nano);
    if (sqlite3_step(s) == SQLITE_DONE) n = sqlite3_changes64(metrics_);
  }
  sqlite3_finalize(s);
  std::string error;
  if (n > 0) LoadSeries(&error);
  return n;
}

std::int64_t SqliteStore::CountMetrics() {
  sqlite3* db = metrics_;
  sqlite3* own = nullptr;
  if (db == nullptr) {
    const std::string path = MetricsFilePath(options_.path);
    if (sqlite3_open_v2(path.c_str(), &own, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(own);
      return 0;
    }
    sqlite3_busy_timeout(own, 5000);
    db = own;
  }
  sqlite3_stmt* s = nullptr;
  std::int64_t n = 0;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM metrics", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(own);
  return n;
}

bool SqliteStore::UpsertMetrics(const MetricsRequest& request, std::string* error, bool* busy) {
  std::lock_guard lock(mu_);
  std::optional<PaceWritesOnThisThread> paced;
  if (!ThreadIsPaced()) paced.emplace(&pacer_);
  MakeRoom(0);
  if (metrics_ == nullptr) {  // a reopen after a fault failed
    last_fault_ = static_cast<std::uint8_t>(StoreFault::kIoError);
    *error = fmt::format("store {}: not open", options_.path);
    return false;
  }
  const bool ok = InTransaction(metrics_, error, busy, [&]() -> int {
    sqlite3_stmt* s = upsert_metric_;
    // Binds the series' name and labels first: a new series beyond the limit is not stored.
    std::string labels;
    std::uint64_t h = 0;  // the bound series'
    auto step = [&]() -> int {
      if (!series_.count(h)) {
        if (series_.size() >= options_.max_series) {
          ++options_.stats->series_refused;
          sqlite3_reset(s);
          sqlite3_clear_bindings(s);
          return SQLITE_OK;
        }
        series_.insert(h);
      }
      return StepRow(s);
    };
    for (const auto& rm : request.resource_metrics()) {
      const std::string resource = otlp_json::PlainAttributes(rm.resource().attributes());
      const std::string service = MetricsServiceName(rm.resource());
      for (const auto& sm : rm.scope_metrics()) {
        for (const auto& m : sm.metrics()) {
          auto bind_common = [&](std::string_view type, const auto& point) {
            BindText(s, 1, m.name());
            BindText(s, 2, type);
            BindText(s, 3, m.unit());
            labels = SortedLabels(point.attributes());
            BindText(s, 4, labels);
            h = SeriesHash(m.name(), labels);
            BindU64(s, 8, point.time_unix_nano());
            BindText(s, 9, resource);
            BindText(s, 10, service);
          };
          auto number = [&](std::string_view type, const otlp_metrics::NumberDataPoint& p) {
            bind_common(type, p);
            if (p.value_case() == otlp_metrics::NumberDataPoint::kAsInt)
              sqlite3_bind_double(s, 5, static_cast<double>(p.as_int()));
            else
              sqlite3_bind_double(s, 5, p.as_double());
            return step();
          };
          int rc = SQLITE_OK;
          switch (m.data_case()) {
            case otlp_metrics::Metric::kGauge:
              for (const auto& p : m.gauge().data_points())
                if ((rc = number("gauge", p)) != SQLITE_OK) return rc;
              break;
            case otlp_metrics::Metric::kSum:
              for (const auto& p : m.sum().data_points())
                if ((rc = number("sum", p)) != SQLITE_OK) return rc;
              break;
            case otlp_metrics::Metric::kHistogram:
              for (const auto& p : m.histogram().data_points()) {
                bind_common("histogram", p);
                if (p.has_sum()) sqlite3_bind_double(s, 5, p.sum());
                BindU64(s, 6, p.count());
                std::string data = "{\"bounds\":[";
                for (int i = 0; i < p.explicit_bounds_size(); ++i) {
                  if (i > 0) data.push_back(',');
                  otlp_json::AppendDouble(&data, p.explicit_bounds(i));
                }
                data += "],\"counts\":[";
                for (int i = 0; i < p.bucket_counts_size(); ++i)
                  fmt::format_to(std::back_inserter(data), "{}{}", i > 0 ? "," : "",
                                 p.bucket_counts(i));
                data += "]}";
                BindText(s, 7, data);
                if ((rc = step()) != SQLITE_OK) return rc;
              }
              break;
            case otlp_metrics::Metric::kExponentialHistogram:
              for (const auto& p : m.exponential_histogram().data_points()) {
                bind_common("exponential_histogram", p);
                if (p.has_sum()) sqlite3_bind_double(s, 5, p.sum());
                BindU64(s, 6, p.count());
                if ((rc = step()) != SQLITE_OK) return rc;
              }
              break;
            case otlp_metrics::Metric::kSummary:
              for (const auto& p : m.summary().data_points()) {
                bind_common("summary", p);
                sqlite3_bind_double(s, 5, p.sum());
                BindU64(s, 6, p.count());
                std::string data = "{\"quantiles\":[";
                for (int i = 0; i < p.quantile_values_size(); ++i) {
                  if (i > 0) data.push_back(',');
                  data += "{\"q\":";
                  otlp_json::AppendDouble(&data, p.quantile_values(i).quantile());
                  data += ",\"value\":";
                  otlp_json::AppendDouble(&data, p.quantile_values(i).value());
                  data.push_back('}');
                }
                data += "]}";
                BindText(s, 7, data);
                if ((rc = step()) != SQLITE_OK) return rc;
              }
              break;
            default:
              break;
          }
        }
      }
    }
    return SQLITE_OK;
  });
  if (!ok) last_fault_ = static_cast<std::uint8_t>(ClassifySqliteFailure(metrics_));
  return ok;
}

}  // namespace infertel::exporting
