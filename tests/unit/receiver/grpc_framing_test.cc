#include "receiver/grpc_framing.h"

#include <gtest/gtest.h>

#include <string>

#include "otlp/gzip.h"

namespace infertel::receiver::internal {
namespace {

using State = MessageReader::State;

std::string Prefix(std::uint32_t length, char flag = 0) {
  std::string p(1, flag);
  for (int shift : {24, 16, 8, 0}) p.push_back(static_cast<char>((length >> shift) & 0xff));
  return p;
}

TEST(GrpcTimeout, ParsesEveryUnit) {
  EXPECT_EQ(ParseGrpcTimeout("1H"), std::chrono::hours(1));
  EXPECT_EQ(ParseGrpcTimeout("2M"), std::chrono::minutes(2));
  EXPECT_EQ(ParseGrpcTimeout("3S"), std::chrono::seconds(3));
  EXPECT_EQ(ParseGrpcTimeout("10000m"), std::chrono::seconds(10));
  EXPECT_EQ(ParseGrpcTimeout("5u"), std::chrono::microseconds(5));
  EXPECT_EQ(ParseGrpcTimeout("99999999n"), std::chrono::nanoseconds(99999999));
}

TEST(GrpcTimeout, RefusesMalformed) {
  EXPECT_FALSE(ParseGrpcTimeout(""));
  EXPECT_FALSE(ParseGrpcTimeout("S"));
  EXPECT_FALSE(ParseGrpcTimeout("123456789S"));  // 9 digits
  EXPECT_FALSE(ParseGrpcTimeout("1x"));
  EXPECT_FALSE(ParseGrpcTimeout("-1S"));
  EXPECT_EQ(ParseGrpcTimeout("99999999H"), std::chrono::nanoseconds::max());  // saturates
}

TEST(PercentEncode, EncodesControlsPercentAndNonAscii) {
  EXPECT_EQ(PercentEncode("ok text"), "ok text");
  EXPECT_EQ(PercentEncode("50%\n\xc3\xa9"), "50%25%0A%C3%A9");
}

TEST(Base64Unpadded, MatchesRfc4648WithoutPadding) {
  EXPECT_EQ(Base64Unpadded(""), "");
  EXPECT_EQ(Base64Unpadded("f"), "Zg");
  EXPECT_EQ(Base64Unpadded("fo"), "Zm8");
  EXPECT_EQ(Base64Unpadded("foo"), "Zm9v");
  EXPECT_EQ(Base64Unpadded(std::string("\x0a\x02\x08\x01", 4)), "CgIIAQ");  // RetryInfo 1 s
}

TEST(MessageReader, ReadsAMessageInPieces) {
  MessageReader r(100);
  const std::string wire = Prefix(5) + "hello";
  for (char c : wire.substr(0, wire.size() - 1))
    EXPECT_NE(r.Feed(std::string(1, c)), State::kComplete);
  EXPECT_EQ(r.Feed(wire.substr(wire.size() - 1)), State::kComplete);
  EXPECT_EQ(r.body(), "hello");
  EXPECT_EQ(r.Feed("x"), State::kExtra);
}

TEST(MessageReader, RefusesFromThePrefixAloneKeepingNothing) {
  MessageReader r(1 << 20);
  EXPECT_EQ(r.Feed(Prefix(1536u << 20) + std::string(1000, 'x')), State::kTooLarge);
  EXPECT_EQ(r.kept(), 0u);
  EXPECT_EQ(r.announced(), 1536u << 20);
}

TEST(MessageReader, RefusesABadFlagAndReadsAnEmptyMessage) {
  MessageReader bad(100);
  EXPECT_EQ(bad.Feed(Prefix(1, 2) + "x"), State::kBadFlag);
  MessageReader empty(100);
  EXPECT_EQ(empty.Feed(Prefix(0, 1)), State::kComplete);
  EXPECT_TRUE(empty.compressed());
}

TEST(InflateBounded, StopsAtTheLimit) {
  std::string zipped;
  ASSERT_TRUE(otlp::GzipCompress(std::string(8u << 20, '\0'), &zipped));
  std::string out;
  EXPECT_EQ(InflateBounded(zipped, 1u << 20, &out), InflateResult::kTooLarge);
  EXPECT_LE(out.size(), 1u << 20);
  EXPECT_EQ(InflateBounded(zipped, 8u << 20, &out), InflateResult::kOk);
  EXPECT_EQ(out.size(), 8u << 20);
}

TEST(InflateBounded, RefusesCorruptAndTruncated) {
  std::string zipped;
  ASSERT_TRUE(otlp::GzipCompress("some text to compress", &zipped));
  std::string out;
  EXPECT_EQ(InflateBounded("not gzip", 100, &out), InflateResult::kCorrupt);
  EXPECT_EQ(InflateBounded(zipped.substr(0, zipped.size() - 4), 100, &out),
            InflateResult::kCorrupt);
  EXPECT_EQ(InflateBounded(zipped + "junk", 100, &out), InflateResult::kCorrupt);
}

}  // namespace
}  // namespace infertel::receiver::internal
