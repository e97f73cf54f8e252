#include "harness/report/text_table.h"

#include <algorithm>

namespace noeira {

namespace {

bool right(const std::vector<bool>& right_aligned, size_t col) {
  return col < right_aligned.size() && right_aligned[col];
}

// Display width: count UTF-8 code points, not bytes, so "±" pads like one character.
size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string render_text_table(const TableRows& rows, const std::vector<bool>& right_aligned) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - display_width(row[c]), ' ');
      if (c > 0) line += "  ";
      line += right(right_aligned, c) ? pad + row[c] : row[c] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_markdown_table(const TableRows& rows, const std::vector<bool>& right_aligned) {
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    out += "|";
    for (const std::string& cell : rows[r]) {
      out += ' ';
      out += markdown_cell(cell);
      out += " |";
    }
    out += "\n";
    if (r == 0) {
      out += "|";
      for (size_t c = 0; c < rows[0].size(); ++c)
        out += right(right_aligned, c) ? " ---: |" : " --- |";
      out += "\n";
    }
  }
  return out;
}

}  // namespace noeira
