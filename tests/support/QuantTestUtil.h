// Helpers for the libqopt_quant tests: a scratch folder per test, whole-file reads.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "TestFolder.h"

namespace qopt::quant::testing {

/// A fresh folder named after the running test, removed when the test ends.
class ScratchDir : public qopt::testing::TestFolder {
 public:
  ScratchDir() : TestFolder(pathForTest()) {}

 private:
  static std::filesystem::path pathForTest() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::filesystem::temp_directory_path() /
           (std::string("qopt_quant_") + info->test_suite_name() + "_" + info->name());
  }
};

using qopt::testing::readFile;
using qopt::testing::writeFile;

}  // namespace qopt::quant::testing
