#include "qopt/analysis/TextTable.h"

#include <gtest/gtest.h>

#include <sstream>

namespace qopt::analysis {
namespace {

TEST(TextTableTest, AlignsColumnsAndRightAlignsNumbers) {
  TextTable t({"name", ">value", "note"});
  t.addRow({"a", "1.5", "x"});
  t.addRow({"long-name", "10", ""});
  std::ostringstream out;
  t.print(out, "> ");
  EXPECT_EQ(out.str(),
            "> name       value  note\n"
            "> a            1.5  x\n"
            "> long-name     10  \n");
}

TEST(TextTableTest, ShortRowsArePadded) {
  TextTable t({"a", "b"});
  t.addRow({"1"});
  std::ostringstream out;
  t.print(out, "");
  EXPECT_EQ(out.str(), "a  b\n1  \n");
}

}  // namespace
}  // namespace qopt::analysis
