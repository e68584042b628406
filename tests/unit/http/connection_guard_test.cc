// The connection table of http/connection_guard.h: at the cap the connection that started
// reading first is closed for the new one, a connection being answered is never chosen, and
// with none reading the new connection is refused; each counted.

#include "http/connection_guard.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <vector>

namespace infertel::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

class ConnectionTableTest : public ::testing::Test {
 protected:
  // A stream with an open (unconnected) socket, so that closing it can be seen.
  beast::tcp_stream& NewStream() {
    streams_.push_back(std::make_unique<beast::tcp_stream>(io_));
    streams_.back()->socket().open(tcp::v4());
    return *streams_.back();
  }

  asio::io_context io_;
  std::vector<std::unique_ptr<beast::tcp_stream>> streams_;
  std::shared_ptr<ConnectionStats> stats_ = std::make_shared<ConnectionStats>();
  std::shared_ptr<ConnectionTable> table_ =
      ConnectionTable::Make(ConnectionLimits{.max_connections = 2}, stats_);
};

TEST_F(ConnectionTableTest, AtTheCapTheOldestReaderMakesRoom) {
  auto& a = NewStream();
  auto& b = NewStream();
  auto slot_a = table_->Admit(a);
  auto slot_b = table_->Admit(b);
  ASSERT_TRUE(slot_a && slot_b);
  slot_a->Reading();
  slot_b->Reading();
  auto& c = NewStream();
  auto slot_c = table_->Admit(c);
  ASSERT_TRUE(slot_c);
  io_.poll();  // the eviction runs on the evicted stream's executor
  EXPECT_FALSE(a.socket().is_open());
  EXPECT_TRUE(b.socket().is_open());
  EXPECT_EQ(stats_->evicted.load(), 1u);
  EXPECT_EQ(stats_->open.load(), 2u);
  slot_a.reset();  // the evicted session ends: its place was already given
  EXPECT_EQ(stats_->open.load(), 2u);
}

TEST_F(ConnectionTableTest, ConnectionsBeingAnsweredAreNeverEvicted) {
  auto& a = NewStream();
  auto& b = NewStream();
  auto slot_a = table_->Admit(a);
  auto slot_b = table_->Admit(b);
  slot_a->Reading();
  slot_a->Answering();
  slot_b->Reading();
  slot_b->Answering();
  auto& c = NewStream();
  EXPECT_EQ(table_->Admit(c), nullptr);
  io_.poll();
  EXPECT_TRUE(a.socket().is_open());
  EXPECT_TRUE(b.socket().is_open());
  EXPECT_FALSE(c.socket().is_open());
  EXPECT_EQ(stats_->connection_limit.load(), 1u);
  EXPECT_EQ(stats_->evicted.load(), 0u);
  // A released place is free again.
  slot_b.reset();
  auto& d = NewStream();
  EXPECT_NE(table_->Admit(d), nullptr);
}

TEST_F(ConnectionTableTest, AnEvictedSessionThatEndsFirstIsNotTouched) {
  auto& a = NewStream();
  auto& b = NewStream();
  auto slot_a = table_->Admit(a);
  auto slot_b = table_->Admit(b);
  slot_a->Reading();
  auto& c = NewStream();
  auto slot_c = table_->Admit(c);
  slot_a.reset();  // before the posted close runs
  streams_[0].reset();
  io_.poll();  // must not touch the destroyed stream
  EXPECT_EQ(stats_->evicted.load(), 1u);
  EXPECT_EQ(stats_->open.load(), 2u);
}

}  // namespace
}  // namespace infertel::http
