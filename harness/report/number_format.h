// How numbers look in tables: the same in compare, markdown and HTML output.
#pragma once
#include <string>

namespace noeira {

// Milliseconds with 4 significant digits and no exponent: "0.1234", "1.234", "12.35",
// "1235"; "?" for NaN.
std::string format_ms(double ms);
// A p-value: "0.032", "0.0004", "<1e-06".
std::string format_p(double p);
// printf-style for one double ("%.2f", ...), "?" for NaN.
std::string format_number(const char* fmt, double v);

}  // namespace noeira
