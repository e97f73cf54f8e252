// The error types live in kernels/common so every layer can use them.
#pragma once
#include "kernels/common/error.h"
