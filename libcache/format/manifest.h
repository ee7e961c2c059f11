// manifest.json at the root of a cache: what was built, from what, and where every byte lives
// (docs/FORMAT.md, "Manifest"). Parsing validates every key it uses and reports the first bad one
// as Corruption("<path>: <key path>: <reason>"); no exception escapes (the parser is fuzzed).
// Unknown keys are ignored so that a newer tool may add fields without a version bump.
//
// The file protects itself: its last key, "manifest_checksum", is the XXH3 of every byte before
// that value, so an edit or a flipped bit anywhere (in the content or in the recorded value) fails
// the read. It also records the size and XXH3 of audit.json, which the cache checks on open.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "libcache/format/record_format.h"

namespace yc {

// 2: manifest_checksum and audit_report. 3: every source's label file fingerprinted ("label"), so an
// edited label is found like an edited image. 4: codecs jpeg and auto, and codec.quality; a format-3
// manifest still reads (it cannot name those codecs, so an older build refuses a cache that has them
// at its manifest, as "newer than this build", before it meets a record it cannot decode). Older
// versions are refused with a rebuild hint.
inline constexpr int kManifestFormatVersion = 4;
inline constexpr int kOldestReadableManifestFormat = 3;
inline constexpr const char* kManifestFileName = "manifest.json";

enum class Backend { kShards, kLmdb };
const char* BackendName(Backend backend);                    // "shards" | "lmdb"
bool ParseBackend(std::string_view name, Backend* out);

// A data file of the cache, named relative to the cache root (a plain file name).
struct ShardEntry {
  std::string file;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // shard checksum (the footer's): XXH3 over the bytes before the footer
};
struct LmdbEntry {
  std::string file;
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3 over the whole file
};

// A metadata file of the cache (audit.json): read whole by its users, so bounded by kMaxMetadataBytes.
struct MetadataFileEntry {
  std::string file;  // plain file name in the cache root
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // XXH3 over the whole file
};

// One source image as it was when the cache was built: lets `build` skip unchanged files and
// `verify --sources` notice edits.
struct SourceFingerprint {
  std::string path;       // relative to the dataset root
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t hash = 0;      // XXH3 of the file's bytes
  int64_t record = -1;    // record index in the split, -1 when the image was excluded
  // The image's label file (Ultralytics' img2label path) as read at build; has_label false when there
  // was none (a background image) or it could not be read.
  bool has_label = false;
  uint64_t label_size = 0;
  int64_t label_mtime_ns = 0;
  uint64_t label_hash = 0;  // XXH3 of the label file's bytes
};

struct SplitManifest {
  std::string name;
  uint64_t records = 0;
  uint64_t boxes = 0;
  uint64_t backgrounds = 0;  // records with no boxes
  uint64_t excluded = 0;     // source images not cached (corrupt, unreadable, ...)
  uint64_t pixel_bytes = 0;  // decoded pixel bytes of all records (compression ratio = this / bytes on disk)
  std::vector<ShardEntry> shards;  // backend shards, in record order
  std::optional<LmdbEntry> lmdb;   // backend lmdb
  std::vector<SourceFingerprint> sources;
};

struct Manifest {
  int format_version = kManifestFormatVersion;
  std::string tool_version;
  std::string created;       // UTC, ISO 8601 ("2024-05-01T12:00:00Z")
  std::string dataset_yaml;  // the data.yaml the cache was built from
  std::string dataset_root;  // optional: the dataset root it resolved to (absolute)
  std::string working_dir;   // optional: the working directory of the build (a relative `path:` depends on it)
  std::vector<std::string> names;  // class names, index = class id
  int imgsz = 0;
  Backend backend = Backend::kShards;
  Codec codec;
  uint64_t shard_size = 0;   // target shard bytes (shards backend)
  std::vector<SplitManifest> splits;  // in build order
  nlohmann::ordered_json build_options = nlohmann::ordered_json::object();  // opaque to libcache
  nlohmann::ordered_json audit = nlohmann::ordered_json::object();          // opaque to libcache
  std::optional<MetadataFileEntry> audit_report;  // the builder's audit.json; absent for bare caches

  const SplitManifest* FindSplit(const std::string& name) const;
};

// A file the manifest names besides itself, with what it records of it: the data files of every split
// (shards or data.mdb) in manifest order, then audit.json. What push uploads and pull fetches.
struct ManifestFile {
  std::string name;  // plain file name in the cache root
  uint64_t bytes = 0, checksum = 0;
};
std::vector<ManifestFile> ManifestFiles(const Manifest& manifest);

// The current time in the manifest's `created` format.
std::string ManifestTimestampNow();

// `where` names the source in messages (usually the file path). Checks manifest_checksum first
// (Corruption when it is absent or differs), then every field. A manifest without the checksum that
// is otherwise valid gets Unsupported "built by an older yolocache ... rebuild" (format 1) or
// Corruption (a current one whose checksum line was edited away).
Result<Manifest> ParseManifest(std::string_view json_text, const std::string& where = kManifestFileName);
// Every field, without the checksum, and format versions 1..current: for telling "a yolocache manifest,
// maybe damaged or old" from a foreign file (so a stale cache can be rebuilt over), and for the fuzzer.
// Never use it to trust a cache's contents.
Result<Manifest> ParseManifestContent(std::string_view json_text, const std::string& where = kManifestFileName);
// Pretty-printed, stable key order, ending with the manifest_checksum line.
std::string SerializeManifest(const Manifest& manifest);

// <dir>/manifest.json via ParseManifest. Only a regular file (or a link to one) of at most
// kMaxMetadataBytes is read: a directory, FIFO or device is refused at once (IOError naming it and its
// kind), a missing one is NotFound.
Result<Manifest> ReadManifest(const std::filesystem::path& dir);
// Checks <dir>/<entry.file> is a regular file of entry.bytes bytes whose XXH3 is entry.checksum;
// NotFound / IOError / Corruption naming the file.
Status CheckMetadataFile(const std::filesystem::path& dir, const MetadataFileEntry& entry);
// Atomic: writes manifest.json.tmp, fsyncs it, renames over manifest.json, fsyncs the directory.
Status WriteManifest(const std::filesystem::path& dir, const Manifest& manifest);

}  // namespace yc
