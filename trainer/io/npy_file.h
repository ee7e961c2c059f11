// Arrays written as NumPy .npy files (format version 1.0, numpy.org/doc/stable/reference/generated/
// numpy.lib.format.html): the magic "\x93NUMPY", the version, a little-endian header length, a Python
// dict literal {'descr', 'fortran_order', 'shape'} padded with spaces to a multiple of 64 bytes and ended
// by '\n', then the elements in C order. What np.save(path, array) writes for a float32 / float16 array;
// np.load reads it back. The file is written atomically (libcache/base/output_file.h).
//
//   YC_RETURN_IF_ERROR(WriteNpy("stage0_Conv_features.npy", NpyType::kFloat32, {16, 32, 64}, data));
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace yc::trainer {

enum class NpyType { kFloat32, kFloat16 };  // '<f4', '<f2' (fp16 as raw IEEE half bits)

// The header (magic to '\n') of an array of that type and shape.
std::string NpyHeader(NpyType type, const std::vector<int64_t>& shape);

// Writes the array; `data` holds product(shape) elements of `type` in C order.
Status WriteNpy(const std::filesystem::path& path, NpyType type, const std::vector<int64_t>& shape, const void* data);

}  // namespace yc::trainer
