#include "engines/sglang/sglang_knobs.h"

#include <chrono>

#include "engines/sglang/control.h"

namespace infertel::engines::sglang {
namespace {

namespace sg = engines::sglang;
using config::Value;

// SGLang's documented defaults (facts/sglang.md §1.1, §3.2), assumed when /server_info does
// not report the current value.
constexpr std::int64_t kDefaultTraceLevel = 3;
constexpr std::int64_t kDefaultLogRequestsLevel = 2;

class SglangKnobs final : public EngineKnobs {
 public:
  explicit SglangKnobs(http::Url base) : base_(std::move(base)) {}

  std::string_view engine() const override { return "sglang"; }
  std::string Unsupported(config::Key) const override { return ""; }

  std::optional<Original> ReadOriginal(config::Key key, std::string* error) override {
    const sg::ServerInfo* info = Info(error);
    if (info == nullptr) return std::nullopt;
    auto assumed = [](Value v, std::string_view what) {
      return Original{std::move(v), std::string("not reported by /server_info; SGLang's default ") +
                                        std::string(what) + " assumed"};
    };
    switch (key) {
      case config::Key::kSglangTracingLevel:
        // The level comes from SGLANG_TRACE_LEVEL or /set_trace_level, not a server argument.
        if (info->trace_level) return Original{Value{*info->trace_level}, ""};
        return assumed(Value{kDefaultTraceLevel}, "3");
      case config::Key::kSglangLogRequests:
        if (info->log_requests) return Original{Value{*info->log_requests}, ""};
        return assumed(Value{false}, "false");
      case config::Key::kSglangLogRequestsLevel:
        if (info->log_requests_level) return Original{Value{*info->log_requests_level}, ""};
        return assumed(Value{kDefaultLogRequestsLevel}, "2");
      case config::Key::kSglangLoggingLevel:
        if (info->log_level) {
          // SGLang reports --log-level in lower case ("info"); keep the key's spelling.
          auto parsed = config::ParseValue(config::Spec(key), *info->log_level);
          if (auto* v = std::get_if<Value>(&parsed)) return Original{*v, ""};
          *error = "server_info log_level '" + *info->log_level + "' is not a known level";
          return std::nullopt;
        }
        return assumed(Value{std::string("INFO")}, "INFO");
      default:
        *error = "not an SGLang engine knob";
        return std::nullopt;
    }
  }

  bool Apply(config::Key key, const Value& value, std::string* error) override {
    cached_.reset();  // what /server_info said is stale once we change something
    switch (key) {
      case config::Key::kSglangTracingLevel:
        return sg::SetTraceLevel(base_, static_cast<int>(std::get<std::int64_t>(value)), error);
      case config::Key::kSglangLogRequests: {
        sg::LoggingConfig c;
        c.log_requests = std::get<bool>(value);
        return sg::ConfigureLogging(base_, c, error);
      }
      case config::Key::kSglangLogRequestsLevel: {
        sg::LoggingConfig c;
        c.log_requests_level = static_cast<int>(std::get<std::int64_t>(value));
        return sg::ConfigureLogging(base_, c, error);
      }
      case config::Key::kSglangLoggingLevel: {
        sg::LoggingConfig c;
        c.log_level = std::get<std::string>(value);
        return sg::ConfigureLogging(base_, c, error);
      }
      default:
        *error = "not an SGLang engine knob";
        return false;
    }
  }

  // /server_info rather than /health: SGLang's /health runs a one-token generation. Read
  // afresh, and kept for the pass that may follow.
  bool Answers(std::string* error) override {
    cached_.reset();
    return Info(error) != nullptr;
  }

 private:
  // One /server_info read serves the knobs of one pass.
  const sg::ServerInfo* Info(std::string* error) {
    auto now = std::chrono::steady_clock::now();
    if (cached_ && now - cached_at_ < std::chrono::seconds(1)) return &*cached_;
    cached_ = sg::FetchServerInfo(base_, error);
    cached_at_ = now;
    return cached_ ? &*cached_ : nullptr;
  }

  http::Url base_;
  std::optional<sg::ServerInfo> cached_;
  std::chrono::steady_clock::time_point cached_at_{};
};

}  // namespace

std::unique_ptr<EngineKnobs> MakeKnobs(const http::Url& base) {
  return std::make_unique<SglangKnobs>(base);
}

}  // namespace infertel::engines::sglang
