// An aligned plain-text table for the reports passes print on stderr.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qopt::analysis {

class TextTable {
 public:
  /// A header starting with '>' is right-aligned (numbers); the '>' is not printed.
  explicit TextTable(std::vector<std::string> headers);
  void addRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  /// Each line starts with `indent`; columns are separated by two spaces.
  void print(std::ostream& out, const std::string& indent = "  ") const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> rightAligned_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace qopt::analysis
