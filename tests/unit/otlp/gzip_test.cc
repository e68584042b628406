// gzip bodies: round trip, and the bound on inflated output that stops decompression bombs.
#include "otlp/gzip.h"

#include <string>

#include <gtest/gtest.h>

namespace infertel::otlp {
namespace {

TEST(GzipTest, RoundTripsAndBoundsOutput) {
  const std::string text(100000, 'a');
  std::string z, back;
  ASSERT_TRUE(GzipCompress(text, &z));
  EXPECT_LT(z.size(), 1000u);
  ASSERT_TRUE(GzipDecompress(z, &back, 1 << 20));
  EXPECT_EQ(back, text);
  EXPECT_FALSE(GzipDecompress(z, &back, 1000));
  EXPECT_FALSE(GzipDecompress(z.substr(0, z.size() / 2), &back, 1 << 20));
}

}  // namespace
}  // namespace infertel::otlp
