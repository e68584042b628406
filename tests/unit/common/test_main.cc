// The main of every unit test binary: the engines' keys and metric families join their tables
// (engines/registry.h) before any test reads them, as the agent's own main does.

#include <gtest/gtest.h>

#include "engines/registry.h"

int main(int argc, char** argv) {
  infertel::engines::RegisterEngines();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
