#include "trainer/eval/class_table.h"

#include <cstdio>

namespace yc::trainer {

namespace {

std::string Row(const std::string& name, long long images, long long instances, double p, double r, double map50,
                double map) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%22s%11lld%11lld%11.3g%11.3g%11.3g%11.3g", name.c_str(), images, instances, p, r,
                map50, map);
  return buf;
}

long long At(const std::vector<int64_t>& v, int64_t c) {
  return c >= 0 && static_cast<size_t>(c) < v.size() ? static_cast<long long>(v[static_cast<size_t>(c)]) : 0;
}

}  // namespace

std::vector<std::string> ClassTableLines(const MetricsSummary& m, const std::vector<std::string>& names, bool per_class) {
  char header[256];
  std::snprintf(header, sizeof header, "%22s%11s%11s%11s%11s%11s%11s", "Class", "Images", "Instances", "Box(P", "R",
                "mAP50", "mAP50-95)");
  std::vector<std::string> lines = {header, Row("all", m.images, m.instances, m.precision, m.recall, m.map50, m.map50_95)};
  if (!per_class || names.size() < 2) return lines;
  const ApPerClassResult& pc = m.per_class;
  auto name_of = [&](int64_t c) {
    return c >= 0 && static_cast<size_t>(c) < names.size() ? names[static_cast<size_t>(c)] : std::to_string(c);
  };
  if (pc.classes.empty()) {  // nothing detected: every labelled class at zero, as Ultralytics prints it
    for (size_t c = 0; c < m.instances_per_class.size(); ++c) {
      if (m.instances_per_class[c] == 0) continue;
      lines.push_back(Row(name_of(static_cast<int64_t>(c)), m.images_per_class[c], m.instances_per_class[c], 0, 0, 0, 0));
    }
    return lines;
  }
  for (size_t i = 0; i < pc.classes.size(); ++i) {
    const int64_t c = pc.classes[i];
    double map = 0;
    for (double v : pc.ap[i]) map += v;
    map = pc.ap[i].empty() ? 0.0 : map / static_cast<double>(pc.ap[i].size());
    lines.push_back(Row(name_of(c), At(m.images_per_class, c), pc.num_targets[i], pc.p.empty() ? 0.0 : pc.p[i],
                        pc.r.empty() ? 0.0 : pc.r[i], pc.ap[i].empty() ? 0.0 : pc.ap[i][0], map));
  }
  return lines;
}

}  // namespace yc::trainer
