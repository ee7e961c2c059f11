#include "tools/yolocache_train/teacher_check.h"

#include <filesystem>
#include <vector>

#include "libcache/format/manifest.h"
#include "libcache/record_selection.h"
#include "libcache/source/dataset_spec.h"
#include "tools/yolocache_train/train_cli.h"
#include "trainer/engine/teacher.h"
#include "trainer/io/pretrained.h"

namespace yc::cli {

namespace fs = std::filesystem;

namespace {

// The class names --data declares without building anything; empty when it declares none (a bare
// folder) or cannot be read here (a URL, a missing path: PrepareDataArg then says why).
std::vector<std::string> DeclaredNames(const std::string& data) {
  std::error_code ec;
  if (data.find("://") != std::string::npos) return {};
  if (fs::exists(fs::path(data) / kManifestFileName, ec)) {
    Result<Manifest> m = ReadManifest(data);
    return m.ok() ? m->names : std::vector<std::string>{};
  }
  Result<DatasetSpec> spec = LoadDatasetSpec(data);
  return spec.ok() ? spec->names : std::vector<std::string>{};
}

}  // namespace

int CheckTeacherBeforeData(const char* command, const trainer::TrainOptions& o) {
  if (o.teacher.empty()) return -1;
  Result<trainer::ModelWeights> teacher = trainer::ReadModelWeights(o.teacher);
  if (!teacher.ok()) return Fail(command, teacher.status());
  const std::vector<std::string> names = DeclaredNames(o.data);
  if (names.empty()) return -1;
  const LabelRules rules = trainer::TrainLabelRules(o);
  if (!CheckLabelRules(rules, names.size()).ok()) return -1;  // Train refuses the classes with its own message
  const auto run_nc = static_cast<int64_t>(SelectedNames(names, rules).size());
  if (Status st = trainer::CheckTeacherClasses(*teacher, o.teacher, run_nc); !st.ok()) return Fail(command, st);
  return -1;
}

}  // namespace yc::cli
