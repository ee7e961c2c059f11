// What a resumed run must match: the cache it trained on and the run folder it continues in.
//
// A cache's identity is its manifest_checksum (the XXH3 of manifest.json, which names every shard's
// checksum) and its record count: another dataset, or the same one rebuilt or updated, differs, and
// continuing at the saved batch index of another sampling plan would not be the run it claims to be.
// A run's identity is a random id kept in its checkpoints' meta and in its folder's args.yaml (args.json
// before it): a run folder that now holds another run (its last.pt or args.yaml name another id) is
// not continued in.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "libcache/cache.h"
#include "trainer/io/checkpoint.h"

namespace yc::trainer {

// {"manifest_checksum": "<16 hex>", "records": N}; IOError naming manifest.json when it cannot be read.
Result<nlohmann::json> CacheIdentity(const Cache& cache);
// "manifest 0123456789abcdef, 16 records" (for messages).
std::string DescribeCacheIdentity(const nlohmann::json& identity);

// 16 random hex digits.
std::string NewRunId();
// The id args.yaml (or an older folder's args.json) records in `run_dir`, or "" when there is none.
std::string RunIdOfFolder(const std::filesystem::path& run_dir);

// Whether `run_dir` may take the run `meta` describes, resumed from `checkpoint`: it holds no run, or
// this one (its weights/last.pt is `checkpoint` itself or names the same run id; a checkpoint written
// before run ids: the same options). Else InvalidArgument naming both paths and how to go elsewhere.
Status CheckRunFolder(const std::filesystem::path& run_dir, const std::filesystem::path& checkpoint,
                      const CheckpointMeta& meta);

}  // namespace yc::trainer
