// Where the files the binaries read at run time live: recipes (models/recipes) and the
// twin (reference/). In a source build that is the source tree; in a relocated bundle
// (scripts/gpu-bundle) it is <bundle>/share/noeira-bench beside <bundle>/bin.
#pragma once
#include <filesystem>

namespace noeira {

// $NOEIRA_HOME if set; else <dir of this executable>/../share/noeira-bench when it
// holds models/recipes; else the source tree the binary was built from.
std::filesystem::path install_root();

// The folder of the running executable (/proc/self/exe), empty if unreadable.
std::filesystem::path executable_dir();

}  // namespace noeira
