// docs/csv.md against the code that writes the CSVs, in both directions: every column and status the
// C++ writer has is documented, every documented one exists, in the writer's order.
#include <gtest/gtest.h>

#include "experiments/engine/invariance.hpp"
#include "experiments/report/result.hpp"
#include "tests/docs_tables.hpp"

using namespace gemmlab;

namespace {
const std::string kCsvDoc = std::string(GEMMLAB_SOURCE_DIR) + "/docs/csv.md";
}

TEST(Docs, CsvColumnsAreTheWritersColumns) {
  const auto documented = docs::documented_list(kCsvDoc, "<!-- columns: run -->");
  EXPECT_EQ(docs::list_difference(documented, result_columns(), "result CSV columns"), "");
}

TEST(Docs, StatusesAreTheStatusEnum) {
  std::vector<std::string> code;
  for (Status s : all_statuses()) code.push_back(to_string(s));
  const auto documented = docs::documented_list(kCsvDoc, "<!-- statuses -->");
  EXPECT_EQ(docs::list_difference(documented, code, "statuses"), "");
}

// The README's short table of statuses lists every one too, in the same order.
TEST(Docs, TheReadmeListsEveryStatus) {
  std::vector<std::string> code;
  for (Status s : all_statuses()) code.push_back(to_string(s));
  std::string diff = docs::list_difference(
      docs::documented_list(std::string(GEMMLAB_SOURCE_DIR) + "/README.md", "<!-- statuses -->"), code, "statuses");
  for (std::size_t at; (at = diff.find("docs/csv.md")) != std::string::npos;) diff.replace(at, 11, "README.md");
  EXPECT_EQ(diff, "");
}

TEST(Docs, InvarianceColumnsAreTheWritersColumns) {
  const auto documented = docs::documented_list(kCsvDoc, "<!-- columns: invariance -->");
  EXPECT_EQ(docs::list_difference(documented, invariance_columns(), "invariance CSV columns"), "");
}

// The checks themselves: a list that lacks a column, has one too many or swaps two is caught.
TEST(Docs, ListDifferenceNamesWhatDiffers) {
  const std::vector<std::string> code{"a", "b", "c"};
  EXPECT_EQ(docs::list_difference({"a", "b", "c"}, code, "x"), "");
  EXPECT_NE(docs::list_difference({"a", "b"}, code, "x").find("the code has but docs/csv.md does not document: c"),
            std::string::npos);
  EXPECT_NE(docs::list_difference({"a", "b", "c", "d"}, code, "x").find("docs/csv.md documents but the code does not have: d"),
            std::string::npos);
  EXPECT_NE(docs::list_difference({"a", "c", "b"}, code, "x").find("entry 2 is 'c'"), std::string::npos);
}
