#pragma once
// A listener for gateway tests: records finished exchanges and lets a test wait for them.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "openai/exchange.h"

namespace infertel::gateway {

using openai::Exchange;
using openai::ExchangeListener;
using openai::Outcome;

class ExchangeRecorder : public openai::ExchangeListener {
 public:
  void OnExchangeFinished(const openai::Exchange& ex) noexcept override {
    std::lock_guard lock(mu_);
    exchanges_.push_back(ex);
    cv_.notify_all();
  }
  // The index-th finished exchange, waiting up to 10 s for it.
  openai::Exchange WaitOne(std::size_t index = 0) {
    std::unique_lock lock(mu_);
    bool ok =
        cv_.wait_for(lock, std::chrono::seconds(10), [&] { return exchanges_.size() > index; });
    EXPECT_TRUE(ok) << "no exchange finished";
    return ok ? exchanges_[index] : openai::Exchange{};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Exchange> exchanges_;
};

}  // namespace infertel::gateway
