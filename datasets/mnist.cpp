#include "datasets/mnist.h"

#include "datasets/idx.h"

namespace noeira {
namespace {

constexpr int kNumClasses = 10;

struct Checksums {
  const char* train_images;
  const char* train_labels;
  const char* test_images;
  const char* test_labels;
};

// sha256 of the files as published at the mirrors below; their md5s are the ones
// torchvision checks (e.g. train images: MNIST f68b3c2d..., Fashion 8d4fb7e6...).
constexpr Checksums kMnistSha256 = {
    "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
};
constexpr Checksums kFashionSha256 = {
    "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
    "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
    "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
    "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
};
// Debian's dataset-fashion-mnist (0.0~git20200523.55506a9-1) ships the same
// decompressed bytes and the same deflate stream, but its packaging rewrote the gzip
// header (no file name, mtime = changelog date), so the .gz files hash differently.
constexpr Checksums kFashionDebianSha256 = {
    "b0564c3eedabfbf835052cff8503ea422014ce006caf5b757f851416ee8300c7",
    "0ae29f65d86684f32d1b9c85147786c547b9c6aebcaf235f0400a0cce308b056",
    "cc1d090a38ace84dfa1aa66e3ada7c336ef481a96936906477e6dd344da56eaa",
    "8d3605d196f4be44669e46906da9733c8131fef761fdbfec72c424d5222f1a05",
};

const std::vector<std::string> kMnistMirrors = {
    "https://ossci-datasets.s3.amazonaws.com/mnist/",  // torchvision's mirror
    "http://yann.lecun.com/exdb/mnist/",               // the original
};
const std::vector<std::string> kFashionMirrors = {
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",  // as torchvision
};

DataFile make_file(std::string_view dir, const std::string& file_name, const char* sha256,
                   const std::vector<std::string>& mirrors, const char* debian_sha256) {
  DataFile file{std::string(dir) + "/" + file_name, sha256, {}};
  for (const auto& mirror : mirrors) file.urls.push_back(mirror + file_name);
  if (debian_sha256 != nullptr) file.also_accepted_sha256.push_back(debian_sha256);
  return file;
}

}  // namespace

std::string_view mnist_variant_name(MnistVariant variant) {
  return variant == MnistVariant::kFashion ? "fashion-mnist" : "mnist";
}

Result<MnistVariant> parse_mnist_variant(std::string_view name) {
  if (name == "mnist") return MnistVariant::kMnist;
  if (name == "fashion-mnist") return MnistVariant::kFashion;
  return make_error("unknown MNIST variant '" + std::string(name) +
                    "'; use mnist or fashion-mnist");
}

MnistFiles mnist_files(MnistVariant variant) {
  const bool fashion = variant == MnistVariant::kFashion;
  const Checksums& sha = fashion ? kFashionSha256 : kMnistSha256;
  const Checksums* debian = fashion ? &kFashionDebianSha256 : nullptr;
  const auto& mirrors = fashion ? kFashionMirrors : kMnistMirrors;
  const std::string_view dir = mnist_variant_name(variant);
  MnistFiles files{
      make_file(dir, "train-images-idx3-ubyte.gz", sha.train_images, mirrors,
                debian ? debian->train_images : nullptr),
      make_file(dir, "train-labels-idx1-ubyte.gz", sha.train_labels, mirrors,
                debian ? debian->train_labels : nullptr),
      make_file(dir, "t10k-images-idx3-ubyte.gz", sha.test_images, mirrors,
                debian ? debian->test_images : nullptr),
      make_file(dir, "t10k-labels-idx1-ubyte.gz", sha.test_labels, mirrors,
                debian ? debian->test_labels : nullptr),
      {},
  };
  if (fashion) files.system_dirs.push_back("/usr/share/datasets/fashion-mnist");
  return files;
}

Result<ImageSplit> load_mnist(MnistVariant variant, const DataSource& source) {
  const MnistFiles files = mnist_files(variant);
  DataSource with_system_dirs = source;
  for (const auto& dir : files.system_dirs) with_system_dirs.system_dirs.push_back(dir);

  // Locate all four first, so a missing file fails before any slow decompression.
  const DataFile* wanted[] = {&files.train_images, &files.train_labels, &files.test_images,
                              &files.test_labels};
  std::filesystem::path paths[4];
  for (int i = 0; i < 4; ++i) {
    auto found = locate(*wanted[i], with_system_dirs);
    if (!found) return found.error();
    paths[i] = *found;
  }
  const std::string name(mnist_variant_name(variant));
  auto train = load_idx_gz(paths[0], paths[1], name, kNumClasses);
  if (!train) return train.error();
  auto test = load_idx_gz(paths[2], paths[3], name, kNumClasses);
  if (!test) return test.error();
  return ImageSplit{std::move(train).value(), std::move(test).value()};
}

}  // namespace noeira
