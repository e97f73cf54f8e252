// The ops' contract errors (kernels/dispatch.h): a broken contract stops the process.
#include "kernels/dispatch.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/common/dtype.h"

namespace noeira {

namespace {

[[noreturn]] void contract_broken(const char* op, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "noeira: internal error: %s: %s\n", op, what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

void unsupported_dtype(const char* op, DType dtype) {
  contract_broken(op, std::string("no kernel for dtype ") + dtype_name(dtype));
}

void unsupported_dtypes(const char* op, DType from, DType to) {
  contract_broken(op, std::string("no kernel from dtype ") + dtype_name(from) + " to " +
                          dtype_name(to));
}

void mixed_dtypes(const char* op, DType first, DType other) {
  contract_broken(op, std::string("operands mix dtypes ") + dtype_name(first) + " and " +
                          dtype_name(other));
}

void wrong_elems(const char* op, int64_t expected, int64_t got) {
  contract_broken(op, "a view holds " + std::to_string(got) + " elements where the op's shape "
                      "says " + std::to_string(expected));
}

}  // namespace noeira
