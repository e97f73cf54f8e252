#pragma once
#include <string>
#include <string_view>

namespace noeira {

// Text made safe inside HTML/SVG elements and quoted attributes: & < > " ' escaped.
std::string html_escape(std::string_view text);

}  // namespace noeira
