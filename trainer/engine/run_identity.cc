#include "trainer/engine/run_identity.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "libcache/format/manifest.h"
#include "trainer/config/args_yaml.h"

namespace yc::trainer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// A small JSON file (manifest.json, args.json) as a document, or discarded.
Json ReadJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Json(Json::value_t::discarded);
  std::ostringstream s;
  s << in.rdbuf();
  return Json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

Result<Json> CacheIdentity(const Cache& cache) {
  const fs::path manifest = cache.dir() / kManifestFileName;
  const Json j = ReadJson(manifest);  // Cache::Open has checked its size and checksum
  auto it = j.is_object() ? j.find("manifest_checksum") : j.end();
  if (!j.is_object() || it == j.end() || !it->is_string()) {
    return Status::IOError(Status::At(manifest.string(), "cannot read its manifest_checksum"));
  }
  uint64_t records = 0;
  for (const SplitManifest& s : cache.manifest().splits) records += s.records;
  return Json{{"manifest_checksum", it->get<std::string>()}, {"records", records}};
}

std::string DescribeCacheIdentity(const Json& identity) {
  std::string checksum = "?", records = "?";
  if (auto it = identity.find("manifest_checksum"); it != identity.end() && it->is_string()) checksum = it->get<std::string>();
  if (auto it = identity.find("records"); it != identity.end() && it->is_number_unsigned()) records = std::to_string(it->get<uint64_t>());
  return "manifest " + checksum + ", " + records + " records";
}

std::string NewRunId() {
  std::random_device rd;
  const uint64_t bits = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return hex;
}

// args.yaml (config/args_yaml.h), or the args.json of a folder written before it.
std::string RunIdOfFolder(const fs::path& run_dir) {
  if (std::ifstream yaml(run_dir / "args.yaml", std::ios::binary); yaml) {
    std::string first;
    std::getline(yaml, first);
    if (const std::string id = RunIdFromArgsYaml(first + "\n"); !id.empty()) return id;
  }
  const Json args = ReadJson(run_dir / "args.json");
  if (!args.is_object()) return "";
  auto it = args.find("run_id");
  return it != args.end() && it->is_string() ? it->get<std::string>() : "";
}

Status CheckRunFolder(const fs::path& run_dir, const fs::path& checkpoint, const CheckpointMeta& meta) {
  std::error_code ec;
  const fs::path last = run_dir / "weights" / "last.pt";
  auto refuse = [&](const std::string& what) {
    return Status::InvalidArgument("--resume " + checkpoint.string() + ": its run folder " + run_dir.string() +
                                   " now holds another run (" + what + "); give --out DIR to continue it elsewhere");
  };
  if (fs::exists(last, ec)) {
    if (fs::equivalent(last, checkpoint, ec)) return Status::OK();
    Result<std::unique_ptr<CheckpointReader>> other = CheckpointReader::Open(last, at::Device(at::kCPU));
    if (!other.ok()) return refuse(last.string() + " cannot be read: " + other.status().message());
    const CheckpointMeta& o = (*other)->meta();
    if (!meta.run_id.empty() || !o.run_id.empty()) {
      if (o.run_id == meta.run_id) return Status::OK();
      return refuse(last.string() + " is run " + (o.run_id.empty() ? "(unnamed)" : o.run_id) + ", the checkpoint run " +
                    (meta.run_id.empty() ? "(unnamed)" : meta.run_id));
    }
    // Both written before run ids: the same run has the same options.
    if (ToJson(o.options) == ToJson(meta.options)) return Status::OK();
    return refuse(last.string() + " was trained with other options");
  }
  const std::string folder_id = RunIdOfFolder(run_dir);
  if (!folder_id.empty() && !meta.run_id.empty() && folder_id != meta.run_id) {
    const fs::path args = fs::exists(run_dir / "args.yaml", ec) ? run_dir / "args.yaml" : run_dir / "args.json";
    return refuse(args.string() + " is run " + folder_id + ", the checkpoint run " + meta.run_id);
  }
  if (folder_id.empty() && !meta.run_id.empty() && fs::exists(run_dir / "results.csv", ec)) {
    return refuse((run_dir / "results.csv").string() + " belongs to an unnamed run");
  }
  return Status::OK();
}

}  // namespace yc::trainer
