// IDX files (the MNIST family's format), gzip-compressed, read with zlib.
#pragma once
#include <filesystem>
#include <string>

#include "datasets/image_dataset.h"
#include "nn/error.h"

namespace noeira {

// Reads an images file (magic 0x00000803: u8, count x rows x cols) and its labels file
// (magic 0x00000801: u8, count). Every failure is one line naming the file: missing,
// not gzip, corrupt or truncated gzip stream, wrong magic, fewer or more bytes than the
// header's dims imply, image/label count mismatch, a label >= num_classes.
Result<ImageDataset> load_idx_gz(const std::filesystem::path& images,
                                 const std::filesystem::path& labels, std::string name,
                                 int num_classes);

}  // namespace noeira
