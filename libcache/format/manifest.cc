#include "libcache/format/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <new>
#include <set>

#include <xxhash.h>
#include <zstd.h>

#include "libcache/base/coding.h"
#include "libcache/base/file_read.h"
#include "libcache/base/mapped_file.h"
#include "libcache/base/path_json.h"
#include "libcache/format/jpeg_pixels.h"

namespace yc {
namespace {

using json = nlohmann::ordered_json;

constexpr int kMaxJsonDepth = 64;  // opaque blobs included; deeper input is hostile, not a manifest

// The file ends with exactly  ,\n  "manifest_checksum": "<16 lowercase hex>"\n}\n  and the value is
// XXH3 over every byte before it (the key included). Found by position, not by parsing, so the bytes
// that are hashed are the bytes on disk: any change to them, or to the recorded value, is a mismatch.
constexpr std::string_view kChecksumLead = "\"manifest_checksum\": \"";
constexpr std::string_view kChecksumTail = "\"\n}\n";
constexpr size_t kChecksumDigits = 16;

// Every validation failure in one place: "<where>: <key path>: <reason>".
class Checker {
 public:
  explicit Checker(std::string where) : where_(std::move(where)) {}
  Status Fail(const std::string& key, const std::string& reason) const {
    return Status::Corruption(where_ + ": " + key + ": " + reason);
  }

  Status Object(const json& parent, const std::string& key_path, const char* key, const json** out) const {
    auto it = parent.find(key);
    if (it == parent.end()) return Fail(key_path, "missing");
    if (!it->is_object()) return Fail(key_path, "expected an object");
    *out = &*it;
    return Status::OK();
  }
  Status Array(const json& parent, const std::string& key_path, const char* key, const json** out) const {
    auto it = parent.find(key);
    if (it == parent.end()) return Fail(key_path, "missing");
    if (!it->is_array()) return Fail(key_path, "expected an array");
    *out = &*it;
    return Status::OK();
  }
  Status String(const json& parent, const std::string& key_path, const char* key, std::string* out) const {
    auto it = parent.find(key);
    if (it == parent.end()) return Fail(key_path, "missing");
    if (!it->is_string()) return Fail(key_path, "expected a string");
    *out = it->get_ref<const std::string&>();
    return Status::OK();
  }
  Status Uint(const json& parent, const std::string& key_path, const char* key, uint64_t* out,
              uint64_t max = std::numeric_limits<uint64_t>::max()) const {
    auto it = parent.find(key);
    if (it == parent.end()) return Fail(key_path, "missing");
    if (!it->is_number_unsigned()) return Fail(key_path, "expected a non-negative integer");
    const uint64_t v = it->get<uint64_t>();
    if (v > max) return Fail(key_path, "value " + std::to_string(v) + " exceeds " + std::to_string(max));
    *out = v;
    return Status::OK();
  }
  Status Int(const json& parent, const std::string& key_path, const char* key, int64_t* out, int64_t min,
             int64_t max) const {
    auto it = parent.find(key);
    if (it == parent.end()) return Fail(key_path, "missing");
    if (!it->is_number_integer()) return Fail(key_path, "expected an integer");
    int64_t v;
    if (it->is_number_unsigned()) {
      const uint64_t u = it->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Fail(key_path, "out of range");
      v = static_cast<int64_t>(u);
    } else {
      v = it->get<int64_t>();
    }
    if (v < min || v > max) return Fail(key_path, "value " + std::to_string(v) + " out of range");
    *out = v;
    return Status::OK();
  }
  Status Checksum(const json& parent, const std::string& key_path, const char* key, uint64_t* out) const {
    std::string hex;
    YC_RETURN_IF_ERROR(String(parent, key_path, key, &hex));
    if (!ChecksumFromHex(hex, out)) return Fail(key_path, "expected 16 hex digits");
    return Status::OK();
  }

 private:
  std::string where_;
};

// Data files and split names become paths under the cache root: only plain names are allowed, so a
// hand-edited manifest cannot point the reader anywhere else.
bool IsPlainName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Nesting depth outside strings; the recursive serializer must never meet a hostile depth.
bool DepthWithin(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

std::string Key(const std::string& parent, const std::string& child) { return parent.empty() ? child : parent + "." + child; }
std::string Index(const std::string& parent, size_t i) { return parent + "[" + std::to_string(i) + "]"; }

Status ParseFileEntry(const Checker& c, const json& e, const std::string& path, std::string* file, uint64_t* records,
                      uint64_t* bytes, uint64_t* checksum, std::set<std::string>* seen) {
  if (!e.is_object()) return c.Fail(path, "expected an object");
  YC_RETURN_IF_ERROR(c.String(e, Key(path, "file"), "file", file));
  if (!IsPlainName(*file)) return c.Fail(Key(path, "file"), "must be a plain file name ([A-Za-z0-9._-])");
  if (!seen->insert(*file).second) return c.Fail(Key(path, "file"), "'" + *file + "' is listed twice");
  YC_RETURN_IF_ERROR(c.Uint(e, Key(path, "records"), "records", records));
  YC_RETURN_IF_ERROR(c.Uint(e, Key(path, "bytes"), "bytes", bytes));
  return c.Checksum(e, Key(path, "checksum"), "checksum", checksum);
}

// "label": null (no label file) or {"size", "mtime_ns", "hash"}.
Status ParseLabelFingerprint(const Checker& c, const json& e, const std::string& path, SourceFingerprint* f) {
  const auto it = e.find("label");
  if (it == e.end()) return c.Fail(path, "missing");
  if (it->is_null()) return Status::OK();
  if (!it->is_object()) return c.Fail(path, "expected null or an object");
  f->has_label = true;
  YC_RETURN_IF_ERROR(c.Uint(*it, Key(path, "size"), "size", &f->label_size));
  YC_RETURN_IF_ERROR(c.Int(*it, Key(path, "mtime_ns"), "mtime_ns", &f->label_mtime_ns, std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max()));
  return c.Checksum(*it, Key(path, "hash"), "hash", &f->label_hash);
}

Status ParseSplit(const Checker& c, const Manifest& m, const json& s, const std::string& path, SplitManifest* out,
                  std::set<std::string>* files) {
  YC_RETURN_IF_ERROR(c.Uint(s, Key(path, "records"), "records", &out->records));
  YC_RETURN_IF_ERROR(c.Uint(s, Key(path, "boxes"), "boxes", &out->boxes));
  YC_RETURN_IF_ERROR(c.Uint(s, Key(path, "backgrounds"), "backgrounds", &out->backgrounds, out->records));
  YC_RETURN_IF_ERROR(c.Uint(s, Key(path, "excluded"), "excluded", &out->excluded));
  YC_RETURN_IF_ERROR(c.Uint(s, Key(path, "pixel_bytes"), "pixel_bytes", &out->pixel_bytes));

  if (m.backend == Backend::kShards) {
    if (s.contains("lmdb")) return c.Fail(Key(path, "lmdb"), "present but the backend is shards");
    const json* shards;
    YC_RETURN_IF_ERROR(c.Array(s, Key(path, "shards"), "shards", &shards));
    uint64_t total = 0;
    for (size_t i = 0; i < shards->size(); ++i) {
      ShardEntry e;
      const std::string ep = Index(Key(path, "shards"), i);
      YC_RETURN_IF_ERROR(ParseFileEntry(c, (*shards)[i], ep, &e.file, &e.records, &e.bytes, &e.checksum, files));
      if (e.records > out->records - total) return c.Fail(Key(ep, "records"), "shards hold more records than the split");
      total += e.records;
      out->shards.push_back(std::move(e));
    }
    if (total != out->records)
      return c.Fail(Key(path, "shards"), "shards hold " + std::to_string(total) + " records, the split says " +
                                            std::to_string(out->records));
  } else {
    if (s.contains("shards") && !(s["shards"].is_array() && s["shards"].empty()))
      return c.Fail(Key(path, "shards"), "present but the backend is lmdb");
    const json* l;
    YC_RETURN_IF_ERROR(c.Object(s, Key(path, "lmdb"), "lmdb", &l));
    LmdbEntry e;
    YC_RETURN_IF_ERROR(ParseFileEntry(c, *l, Key(path, "lmdb"), &e.file, &e.records, &e.bytes, &e.checksum, files));
    if (e.records != out->records) return c.Fail(Key(path, "lmdb.records"), "differs from the split's record count");
    out->lmdb = std::move(e);
  }

  const json* sources;
  YC_RETURN_IF_ERROR(c.Array(s, Key(path, "sources"), "sources", &sources));
  out->sources.reserve(sources->size());
  for (size_t i = 0; i < sources->size(); ++i) {
    const json& e = (*sources)[i];
    const std::string ep = Index(Key(path, "sources"), i);
    if (!e.is_object()) return c.Fail(ep, "expected an object");
    SourceFingerprint f;
    YC_RETURN_IF_ERROR(c.String(e, Key(ep, "path"), "path", &f.path));
    if (e.contains("path_hex")) {  // the exact bytes of a name that is not UTF-8 (path_text.h)
      std::string hex;
      YC_RETURN_IF_ERROR(c.String(e, Key(ep, "path_hex"), "path_hex", &hex));
      if (!HexToBytes(hex, &f.path)) return c.Fail(Key(ep, "path_hex"), "expected an even number of hex digits");
    }
    YC_RETURN_IF_ERROR(c.Uint(e, Key(ep, "size"), "size", &f.size));
    YC_RETURN_IF_ERROR(c.Int(e, Key(ep, "mtime_ns"), "mtime_ns", &f.mtime_ns, std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()));
    YC_RETURN_IF_ERROR(c.Checksum(e, Key(ep, "hash"), "hash", &f.hash));
    if (m.format_version >= 3) YC_RETURN_IF_ERROR(ParseLabelFingerprint(c, e, Key(ep, "label"), &f));
    const int64_t max_record = out->records == 0 ? -1 : static_cast<int64_t>(std::min<uint64_t>(out->records - 1, INT64_MAX));
    YC_RETURN_IF_ERROR(c.Int(e, Key(ep, "record"), "record", &f.record, -1, max_record));
    out->sources.push_back(std::move(f));
  }
  return Status::OK();
}

Status ParseRoot(const Checker& c, const json& root, Manifest* m) {
  if (!root.is_object()) return c.Fail("(root)", "expected a JSON object");
  std::string format;
  YC_RETURN_IF_ERROR(c.String(root, "format", "format", &format));
  if (format != "yolocache") return c.Fail("format", "expected \"yolocache\", got \"" + format + "\"");
  uint64_t version;
  YC_RETURN_IF_ERROR(c.Uint(root, "format_version", "format_version", &version));
  if (version == 0) return c.Fail("format_version", "must be >= 1");
  if (version > static_cast<uint64_t>(kManifestFormatVersion))
    return Status::Unsupported(c.Fail("format_version", "cache format " + std::to_string(version) +
                                                            " is newer than this build (reads " +
                                                            std::to_string(kManifestFormatVersion) + "): rebuild or upgrade")
                                   .message());
  m->format_version = static_cast<int>(version);
  YC_RETURN_IF_ERROR(c.String(root, "tool_version", "tool_version", &m->tool_version));
  YC_RETURN_IF_ERROR(c.String(root, "created", "created", &m->created));
  const json* dataset;
  YC_RETURN_IF_ERROR(c.Object(root, "dataset", "dataset", &dataset));
  YC_RETURN_IF_ERROR(c.String(*dataset, "dataset.yaml", "yaml", &m->dataset_yaml));
  if (dataset->contains("root")) YC_RETURN_IF_ERROR(c.String(*dataset, "dataset.root", "root", &m->dataset_root));
  if (dataset->contains("working_dir"))
    YC_RETURN_IF_ERROR(c.String(*dataset, "dataset.working_dir", "working_dir", &m->working_dir));

  const json* names;
  YC_RETURN_IF_ERROR(c.Array(root, "names", "names", &names));
  for (size_t i = 0; i < names->size(); ++i) {
    if (!(*names)[i].is_string()) return c.Fail(Index("names", i), "expected a string");
    m->names.push_back((*names)[i].get<std::string>());
  }
  uint64_t imgsz;
  YC_RETURN_IF_ERROR(c.Uint(root, "imgsz", "imgsz", &imgsz, kMaxRecordSide));
  if (imgsz == 0) return c.Fail("imgsz", "must be positive");
  m->imgsz = static_cast<int>(imgsz);

  std::string backend;
  YC_RETURN_IF_ERROR(c.String(root, "backend", "backend", &backend));
  if (!ParseBackend(backend, &m->backend)) return c.Fail("backend", "expected \"shards\" or \"lmdb\", got \"" + backend + "\"");
  const json* codec;
  YC_RETURN_IF_ERROR(c.Object(root, "codec", "codec", &codec));
  std::string codec_name;
  YC_RETURN_IF_ERROR(c.String(*codec, "codec.name", "name", &codec_name));
  if (!ParseCodecKind(codec_name, &m->codec.kind))
    return c.Fail("codec.name", "expected \"none\", \"zstd\", \"jpeg\" or \"auto\"");
  int64_t level;
  YC_RETURN_IF_ERROR(c.Int(*codec, "codec.level", "level", &level, ZSTD_minCLevel(), ZSTD_maxCLevel()));
  m->codec.level = static_cast<int>(level);
  if (m->format_version >= 4) {
    int64_t quality;
    YC_RETURN_IF_ERROR(c.Int(*codec, "codec.quality", "quality", &quality, kMinJpegQuality, kMaxJpegQuality));
    m->codec.quality = static_cast<int>(quality);
  } else if (m->codec.kind == Codec::Kind::kJpeg || m->codec.kind == Codec::Kind::kAuto) {
    return c.Fail("codec.name", codec_name + " needs manifest format 4, this one is " + std::to_string(m->format_version));
  }
  YC_RETURN_IF_ERROR(c.Uint(root, "shard_size", "shard_size", &m->shard_size));

  const json* splits;
  YC_RETURN_IF_ERROR(c.Object(root, "splits", "splits", &splits));
  std::set<std::string> files;
  for (auto it = splits->begin(); it != splits->end(); ++it) {
    const std::string path = "splits." + it.key();
    if (!IsPlainName(it.key())) return c.Fail(path, "split names must be plain names ([A-Za-z0-9._-])");
    if (!it.value().is_object()) return c.Fail(path, "expected an object");
    SplitManifest split;
    split.name = it.key();
    YC_RETURN_IF_ERROR(ParseSplit(c, *m, it.value(), path, &split, &files));
    m->splits.push_back(std::move(split));
  }
  if (auto it = root.find("build_options"); it != root.end()) m->build_options = *it;
  if (auto it = root.find("audit"); it != root.end()) m->audit = *it;
  if (root.contains("audit_report")) {
    MetadataFileEntry e;
    const json& r = root["audit_report"];
    if (!r.is_object()) return c.Fail("audit_report", "expected an object");
    YC_RETURN_IF_ERROR(c.String(r, "audit_report.file", "file", &e.file));
    if (!IsPlainName(e.file)) return c.Fail("audit_report.file", "must be a plain file name ([A-Za-z0-9._-])");
    if (e.file == kManifestFileName || !files.insert(e.file).second)
      return c.Fail("audit_report.file", "'" + e.file + "' is also a data file or the manifest");
    YC_RETURN_IF_ERROR(c.Uint(r, "audit_report.bytes", "bytes", &e.bytes, kMaxMetadataBytes));
    YC_RETURN_IF_ERROR(c.Checksum(r, "audit_report.checksum", "checksum", &e.checksum));
    m->audit_report = std::move(e);
  }
  return Status::OK();
}

json FileEntryJson(const std::string& file, uint64_t records, uint64_t bytes, uint64_t checksum) {
  json e = json::object();
  e["file"] = file;
  e["records"] = records;
  e["bytes"] = bytes;
  e["checksum"] = ChecksumToHex(checksum);
  return e;
}

std::string Dump(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

}  // namespace

const char* BackendName(Backend backend) { return backend == Backend::kLmdb ? "lmdb" : "shards"; }

bool ParseBackend(std::string_view name, Backend* out) {
  if (name == "shards") *out = Backend::kShards;
  else if (name == "lmdb") *out = Backend::kLmdb;
  else return false;
  return true;
}

const SplitManifest* Manifest::FindSplit(const std::string& name) const {
  for (const SplitManifest& s : splits)
    if (s.name == name) return &s;
  return nullptr;
}

std::string ManifestTimestampNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Result<Manifest> ParseManifestContent(std::string_view text, const std::string& where) {
  const Checker c(where);
  if (!DepthWithin(text, kMaxJsonDepth))
    return c.Fail("(root)", "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  try {
    json root = json::parse(text.begin(), text.end());
    Manifest m;
    YC_RETURN_IF_ERROR(ParseRoot(c, root, &m));
    return m;
  } catch (const nlohmann::json::exception& e) {
    return Status::Corruption(where + ": not valid JSON: " + e.what());
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(where + ": out of memory while reading the manifest");
  } catch (const std::exception& e) {
    return Status::Corruption(where + ": unreadable manifest: " + e.what());
  }
}

namespace {

json SourceJson(const SourceFingerprint& f) {
  json e = json::object();
  SetPathField(e, "path", f.path);  // readable and valid UTF-8, and exact when the name is not UTF-8
  e["size"] = f.size;
  e["mtime_ns"] = f.mtime_ns;
  e["hash"] = ChecksumToHex(f.hash);
  e["record"] = f.record;
  e["label"] = f.has_label ? json::object({{"size", f.label_size}, {"mtime_ns", f.label_mtime_ns},
                                            {"hash", ChecksumToHex(f.label_hash)}})
                           : json(nullptr);
  return e;
}

// splice=true puts a marker where each split's sources go; the caller replaces it with one compact
// line per entry, so the file stays readable and diffable without being mostly whitespace.
json ManifestJson(const Manifest& m, bool splice) {
  json root = json::object();
  root["format"] = "yolocache";
  root["format_version"] = m.format_version;
  root["tool_version"] = m.tool_version;
  root["created"] = m.created;
  root["dataset"] = json::object({{"yaml", m.dataset_yaml}});
  if (!m.dataset_root.empty()) root["dataset"]["root"] = m.dataset_root;
  if (!m.working_dir.empty()) root["dataset"]["working_dir"] = m.working_dir;
  root["names"] = m.names;
  root["imgsz"] = m.imgsz;
  root["backend"] = BackendName(m.backend);
  root["codec"] = json::object({{"name", CodecKindName(m.codec.kind)}, {"level", m.codec.level}});
  if (m.format_version >= 4) root["codec"]["quality"] = m.codec.quality;
  root["shard_size"] = m.shard_size;
  json splits = json::object();
  for (size_t si = 0; si < m.splits.size(); ++si) {
    const SplitManifest& s = m.splits[si];
    json js = json::object();
    js["records"] = s.records;
    js["boxes"] = s.boxes;
    js["backgrounds"] = s.backgrounds;
    js["pixel_bytes"] = s.pixel_bytes;
    js["excluded"] = s.excluded;
    if (m.backend == Backend::kShards) {
      json shards = json::array();
      for (const ShardEntry& e : s.shards) shards.push_back(FileEntryJson(e.file, e.records, e.bytes, e.checksum));
      js["shards"] = std::move(shards);
    } else if (s.lmdb) {
      js["lmdb"] = FileEntryJson(s.lmdb->file, s.lmdb->records, s.lmdb->bytes, s.lmdb->checksum);
    }
    if (splice) {
      js["sources"] = "\x01yc-sources-" + std::to_string(si);
    } else {
      json sources = json::array();
      for (const SourceFingerprint& f : s.sources) sources.push_back(SourceJson(f));
      js["sources"] = std::move(sources);
    }
    splits[s.name] = std::move(js);
  }
  root["splits"] = std::move(splits);
  root["build_options"] = m.build_options;
  root["audit"] = m.audit;
  if (m.audit_report) {
    const MetadataFileEntry& e = *m.audit_report;
    root["audit_report"] = json::object({{"file", e.file}, {"bytes", e.bytes}, {"checksum", ChecksumToHex(e.checksum)}});
  }
  return root;
}

bool ParseLowerHex(std::string_view hex, uint64_t* out) {
  // Lowercase only: 'a' and 'A' differ in one bit, and both spelling the same value would let that
  // flip through.
  uint64_t v = 0;
  for (char ch : hex) {
    int d;
    if (ch >= '0' && ch <= '9') d = ch - '0';
    else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
    else return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

// Where the recorded checksum's digits start, or npos when the file does not end with the checksum line.
size_t ChecksumValueOffset(std::string_view text) {
  const size_t trailer = kChecksumLead.size() + kChecksumDigits + kChecksumTail.size();
  if (text.size() < trailer) return std::string_view::npos;
  const size_t lead = text.size() - trailer;
  if (text.compare(lead, kChecksumLead.size(), kChecksumLead) != 0) return std::string_view::npos;
  if (text.compare(text.size() - kChecksumTail.size(), kChecksumTail.size(), kChecksumTail) != 0)
    return std::string_view::npos;
  return lead + kChecksumLead.size();
}

// Format 1 has no checksum, format 2 no label fingerprints: nothing a current reader promises can be
// checked on them, and a cache is derived data. Format 3 differs from 4 only in the codecs it can
// name, so it still reads.
Status OlderFormat(int version, const std::string& where) {
  return Status::Unsupported(where + ": built by an older yolocache (manifest format " + std::to_string(version) +
                             ", this build reads " + std::to_string(kOldestReadableManifestFormat) + " to " +
                             std::to_string(kManifestFormatVersion) + "), rebuild with `yolocache build` (without --update)");
}

// A manifest without a checksum line: say why it cannot be trusted, as precisely as its content allows.
Status ExplainMissingChecksum(std::string_view text, const std::string& where) {
  YC_ASSIGN_OR_RETURN(const Manifest content, ParseManifestContent(text, where));
  if (content.format_version < kOldestReadableManifestFormat) return OlderFormat(content.format_version, where);
  return Status::Corruption(where + ": manifest_checksum: missing or not the last line (manifest.json was edited or "
                                    "damaged; rebuild the cache)");
}

}  // namespace

Result<Manifest> ParseManifest(std::string_view text, const std::string& where) {
  const size_t at = ChecksumValueOffset(text);
  if (at == std::string_view::npos) return ExplainMissingChecksum(text, where);
  uint64_t recorded = 0;
  if (!ParseLowerHex(text.substr(at, kChecksumDigits), &recorded))
    return Status::Corruption(where + ": manifest_checksum: expected 16 lowercase hex digits");
  const uint64_t actual = XXH3_64bits(text.data(), at);
  if (actual != recorded)
    return Status::Corruption(where + ": manifest_checksum: the file hashes to " + ChecksumToHex(actual) + ", it records " +
                              ChecksumToHex(recorded) + " (manifest.json was edited or damaged; rebuild the cache)");
  Result<Manifest> m = ParseManifestContent(text, where);
  if (m.ok() && m->format_version < kOldestReadableManifestFormat) return OlderFormat(m->format_version, where);
  return m;
}

std::string SerializeManifest(const Manifest& m) {
  std::string text = Dump(ManifestJson(m, /*splice=*/true), 2);
  bool spliced = true;
  for (size_t si = 0; si < m.splits.size() && spliced; ++si) {
    const std::string marker = "\"\\u0001yc-sources-" + std::to_string(si) + "\"";
    const size_t pos = text.find(marker);
    // A user string (a class name, say) spelling the marker would make the splice ambiguous.
    if (pos == std::string::npos || text.find(marker, pos + 1) != std::string::npos) {
      spliced = false;
      break;
    }
    const std::vector<SourceFingerprint>& sources = m.splits[si].sources;
    std::string block = "[";
    for (size_t i = 0; i < sources.size(); ++i)
      block += (i == 0 ? "\n        " : ",\n        ") + Dump(SourceJson(sources[i]), -1);
    block += sources.empty() ? "]" : "\n      ]";
    text.replace(pos, marker.size(), block);
  }
  if (!spliced) text = Dump(ManifestJson(m, /*splice=*/false), 2);
  // The root is a non-empty object, so the dump ends with "\n}": the checksum becomes its last key.
  text.resize(text.size() - 1);
  text.insert(text.size() - 1, ",");
  text += "  ";
  text += kChecksumLead;
  const uint64_t checksum = XXH3_64bits(text.data(), text.size());
  text += ChecksumToHex(checksum);
  text += kChecksumTail;
  return text;
}

Result<Manifest> ReadManifest(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kManifestFileName;
  std::string text;
  YC_RETURN_IF_ERROR(ReadRegularFile(path, kMaxMetadataBytes, &text));
  return ParseManifest(text, path.string());
}

Status CheckMetadataFile(const std::filesystem::path& dir, const MetadataFileEntry& entry) {
  const std::filesystem::path path = dir / entry.file;
  uint64_t size = 0;
  {
    Result<ScopedFd> fd = OpenRegularFile(path, &size);  // refuses FIFOs, devices, directories
    if (!fd.ok()) {
      if (fd.status().code() == Status::Code::kNotFound)
        return Status::NotFound(Status::At(path.string(), "listed in manifest.json but missing"));
      return fd.status();
    }
  }
  if (size != entry.bytes)
    return Status::Corruption(Status::At(path.string(), "size " + std::to_string(size) + " bytes, manifest.json says " +
                                                            std::to_string(entry.bytes)));
  uint64_t hash = 0, hashed = 0;
  YC_RETURN_IF_ERROR(HashFile(path, &hash, &hashed));
  if (hashed != entry.bytes || hash != entry.checksum)
    return Status::Corruption(Status::At(path.string(), "checksum " + ChecksumToHex(hash) + " differs from manifest.json's " +
                                                            ChecksumToHex(entry.checksum) + " (edited or damaged)"));
  return Status::OK();
}

Status WriteManifest(const std::filesystem::path& dir, const Manifest& manifest) {
  const std::string text = SerializeManifest(manifest);
  const std::string final_path = (dir / kManifestFileName).string();
  const std::string tmp_path = final_path + ".tmp";
  const int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(Status::At(tmp_path, std::string("create: ") + std::strerror(errno)));
  const char* p = text.data();
  size_t n = text.size();
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp_path.c_str());
      return Status::IOError(Status::At(tmp_path, "write: " + err));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    ::unlink(tmp_path.c_str());
    return Status::IOError(Status::At(tmp_path, std::string("fsync/close: ") + std::strerror(errno)));
  }
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0)
    return Status::IOError(Status::At(final_path, std::string("rename: ") + std::strerror(errno)));
  return SyncPath(dir);
}

std::vector<ManifestFile> ManifestFiles(const Manifest& m) {
  std::vector<ManifestFile> files;
  for (const auto& split : m.splits) {
    for (const auto& shard : split.shards) files.push_back({shard.file, shard.bytes, shard.checksum});
    if (split.lmdb) files.push_back({split.lmdb->file, split.lmdb->bytes, split.lmdb->checksum});
  }
  if (m.audit_report) files.push_back({m.audit_report->file, m.audit_report->bytes, m.audit_report->checksum});
  return files;
}

}  // namespace yc
