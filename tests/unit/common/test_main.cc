// The main of every unit test binary: the engines' keys join the key table (engines/registry.h)
// before any test builds a Settings, as the agent's own main does.

#include <gtest/gtest.h>

#include "engines/registry.h"

int main(int argc, char** argv) {
  infertel::engines::RegisterEngines();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
