#include "trainer/io/npy_file.h"

#include <cstring>

#include "libcache/base/output_file.h"

namespace yc::trainer {

namespace {

size_t ElementBytes(NpyType type) { return type == NpyType::kFloat16 ? 2 : 4; }

// Python's repr of a tuple of ints: "()", "(5,)", "(2, 3)".
std::string ShapeTuple(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string NpyHeader(NpyType type, const std::vector<int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + (type == NpyType::kFloat16 ? "<f2" : "<f4") +
                     "', 'fortran_order': False, 'shape': " + ShapeTuple(shape) + ", }";
  // magic (6) + version (2) + length (2) + dict + padding + '\n' is a multiple of 64 (the format's alignment).
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

Status WriteNpy(const std::filesystem::path& path, NpyType type, const std::vector<int64_t>& shape, const void* data) {
  size_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return Status::InvalidArgument(Status::At(path.string(), "negative array dimension"));
    count *= static_cast<size_t>(d);
  }
  std::string bytes = NpyHeader(type, shape);
  const size_t header = bytes.size();
  bytes.resize(header + count * ElementBytes(type));
  // The elements as they lie in memory: little-endian on every host we build for (x86-64, aarch64).
  if (count > 0) std::memcpy(bytes.data() + header, data, count * ElementBytes(type));
  return WriteFileAtomically(path, bytes);
}

}  // namespace yc::trainer
