#pragma once
// Follows one fact about an engine that the agent reads over HTTP rather than from its
// traffic: vLLM's version (the shape of its spans), SGLang's --stream-interval (for
// gen_ai.response.tokens_streamed). On a thread of its own, so the agent's start never waits:
//   - every `retry` until the engine first answers, however long that takes (a large model
//     loads for minutes before the server listens), with one warning after `warn_after`
//     failed attempts;
//   - then every `recheck`, so that an engine restarted with other flags or upgraded in place
//     is followed; while a recheck fails (the engine restarting), every `retry` again.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace infertel {

struct ProbeSchedule {
  std::chrono::milliseconds retry{1000};
  std::chrono::milliseconds recheck{30000};
  int warn_after = 60;
};

class EngineProbe {
 public:
  // `read` asks the engine and applies what it learnt; false with *error when the engine did
  // not answer. It runs on the probe's thread only. `what` names the fact in the warning.
  EngineProbe(std::string thread_name, std::string upstream, std::string what,
              ProbeSchedule schedule, std::function<bool(std::string* error)> read);
  ~EngineProbe();
  EngineProbe(const EngineProbe&) = delete;
  EngineProbe& operator=(const EngineProbe&) = delete;

  // Returns once the thread has stopped; a read in progress finishes first (each has its own
  // timeout).
  void Stop();

 private:
  void Run(const std::string& thread_name);

  std::string upstream_;
  std::string what_;
  ProbeSchedule schedule_;
  std::function<bool(std::string*)> read_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace infertel
