// Tables for the terminal (aligned columns) and for markdown.
#pragma once
#include <string>
#include <vector>

namespace noeira {

using TableRows = std::vector<std::vector<std::string>>;  // first row = header

// Columns padded to their widest cell, two spaces apart. `right_aligned[i]` right-aligns
// column i (numbers); missing entries mean left-aligned.
std::string render_text_table(const TableRows& rows, const std::vector<bool>& right_aligned);

// A GitHub-flavoured markdown table; `|` and newlines inside cells are escaped.
std::string render_markdown_table(const TableRows& rows, const std::vector<bool>& right_aligned);

}  // namespace noeira
