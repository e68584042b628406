#include "gateway/deadlines.h"

namespace infertel::gateway {

Deadline::Deadline(Deadlines* owner, WorkerSocket* socket) : owner_(owner), socket_(socket) {
  owner_->Add(this);
}

Deadline::~Deadline() { owner_->Remove(this); }

void Deadlines::Add(Deadline* d) {
  d->slot_ = slots_.size();
  slots_.push_back(d);
}

void Deadlines::Remove(Deadline* d) {
  Deadline* last = slots_.back();
  slots_[d->slot_] = last;
  last->slot_ = d->slot_;
  slots_.pop_back();
}

std::size_t Deadlines::Sweep() {
  const auto now = Deadline::Clock::now();
  std::size_t fired = 0;
  for (Deadline* d : slots_) {
    if (d->at_ > now) continue;
    ++fired;
    d->at_ = Deadline::Clock::time_point::max();
    d->fired_ = true;
    boost::system::error_code ec;
    d->socket_->cancel(ec);
  }
  return fired;
}

}  // namespace infertel::gateway
