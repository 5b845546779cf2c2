// docs/csv.md's explain CSV columns against the explain writer (experiments/device/explain_gpu.cpp),
// in both directions. No GPU needed: it lives here because the writer is part of the GPU engine.
#include <gtest/gtest.h>

#include "experiments/device/explain_gpu.hpp"
#include "tests/docs_tables.hpp"

using namespace gemmlab;

TEST(Docs, ExplainColumnsAreTheWritersColumns) {
  const auto documented =
      docs::documented_list(std::string(GEMMLAB_SOURCE_DIR) + "/docs/csv.md", "<!-- columns: explain -->");
  EXPECT_EQ(docs::list_difference(documented, explain_columns(), "explain CSV columns"), "");
}
