#include "qopt/analysis/TextTable.h"

#include <algorithm>
#include <ostream>

namespace qopt::analysis {

TextTable::TextTable(std::vector<std::string> headers) {
  for (std::string& h : headers) {
    bool right = !h.empty() && h[0] == '>';
    rightAligned_.push_back(right);
    headers_.push_back(right ? h.substr(1) : h);
  }
}

void TextTable::addRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> widths;
  for (const std::string& h : headers_) widths.push_back(h.size());
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text = indent;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c > 0) text += "  ";
      std::string pad(widths[c] - cells[c].size(), ' ');
      bool last = c + 1 == cells.size();
      text += rightAligned_[c] ? pad + cells[c] : (last ? cells[c] : cells[c] + pad);
    }
    out << text << '\n';
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
}

}  // namespace qopt::analysis
