#include "trainer/engine/results_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "base/format.h"
#include "libcache/base/mapped_file.h"
#include "trainer/plots/charts.h"
#include "trainer/plots/image_file.h"
#include "trainer/plots/plot_canvas.h"

namespace yc::trainer {

namespace fs = std::filesystem;

namespace {

constexpr int kColumns = 15;  // Ultralytics' detection columns; a distillation run's file has one more

// One field of a row: empty text = missing value.
bool ParseField(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return end != nullptr && *end == '\0';
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Status WriteTextAtomic(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Status::IOError(Status::At(tmp.string(), "cannot write"));
  }
  YC_RETURN_IF_ERROR(SyncPath(tmp));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::IOError(Status::At(path.string(), "rename failed: " + ec.message()));
  return Status::OK();
}

}  // namespace

std::string ResultsCsvHeader(bool kd) {
  // train/kd_loss goes last: whatever reads Ultralytics' columns by position (its plot_results) still
  // finds them where they were.
  return std::string("epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
                     "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2") +
         (kd ? ",train/kd_loss" : "");
}

std::string FormatResultsRow(const EpochRecord& r) {
  std::string s = std::to_string(r.epoch) + "," + FormatNumber("%.6g", r.time);
  for (double v : r.train_loss) s += "," + FormatNumber("%.6g", v);
  for (double v : {r.precision, r.recall, r.map50, r.map50_95}) s += "," + (r.validated ? FormatNumber("%.6g", v) : std::string());
  for (double v : r.val_loss) s += "," + (r.has_val_loss ? FormatNumber("%.6g", v) : std::string());
  for (double v : r.lr) s += "," + FormatNumber("%.6g", v);
  if (r.has_kd) s += "," + FormatNumber("%.6g", r.kd_loss);
  return s;
}

nlohmann::ordered_json ResultsColumns(const std::vector<EpochRecord>& records) {
  const bool kd = std::any_of(records.begin(), records.end(), [](const EpochRecord& r) { return r.has_kd; });
  const std::vector<std::string> names = SplitCsv(ResultsCsvHeader(kd));
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const std::string& name : names) out[name] = nlohmann::ordered_json::array();
  for (const EpochRecord& r : records) {
    const std::vector<std::string> cells = SplitCsv(FormatResultsRow(r));  // the values the file holds
    for (size_t i = 0; i < names.size() && i < cells.size(); ++i) {
      double v = std::numeric_limits<double>::quiet_NaN();
      if (!cells[i].empty()) ParseField(cells[i], &v);
      if (i == 0) {
        out[names[i]].push_back(r.epoch);
      } else {
        out[names[i]].push_back(v);
      }
    }
  }
  return out;
}

Result<std::vector<EpochRecord>> ReadResultsCsv(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(Status::At(path.string(), "cannot open"));
  std::vector<EpochRecord> out;
  std::string line;
  int lineno = 0;
  bool kd = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lineno == 1) {
      kd = line == ResultsCsvHeader(true);
      if (!kd && line != ResultsCsvHeader()) return Status::DataError(Status::At(path.string(), "line 1: unexpected header"));
      continue;
    }
    if (line.empty()) continue;
    const auto cells = SplitCsv(line);
    auto bad = [&](const std::string& why) {
      return Status::DataError(Status::At(path.string(), "line " + std::to_string(lineno) + ": " + why));
    };
    const int columns = kColumns + (kd ? 1 : 0);
    if (static_cast<int>(cells.size()) != columns) return bad("expected " + std::to_string(columns) + " columns");
    EpochRecord r;
    double v = 0;
    if (!ParseField(cells[0], &v) || v < 1 || v != std::floor(v)) return bad("bad epoch");
    r.epoch = static_cast<int>(v);
    if (!ParseField(cells[1], &r.time)) return bad("bad time");
    for (int k = 0; k < 3; ++k) {
      if (!ParseField(cells[2 + k], &r.train_loss[k])) return bad("bad train loss");
    }
    double m[4] = {};  // read only when all four parse
    int present = 0;
    for (int k = 0; k < 4; ++k) present += ParseField(cells[5 + k], &m[k]) ? 1 : 0;
    if (present != 0 && present != 4) return bad("partial metrics");
    if (present == 4) {
      r.validated = true;
      r.precision = m[0];
      r.recall = m[1];
      r.map50 = m[2];
      r.map50_95 = m[3];
    }
    present = 0;
    for (int k = 0; k < 3; ++k) present += ParseField(cells[9 + k], &r.val_loss[k]) ? 1 : 0;
    if (present != 0 && present != 3) return bad("partial val losses");
    r.has_val_loss = present == 3;
    for (int k = 0; k < 3; ++k) {
      if (!ParseField(cells[12 + k], &r.lr[k])) return bad("bad lr");
    }
    if (kd) {
      if (!ParseField(cells[15], &r.kd_loss)) return bad("bad kd loss");
      r.has_kd = true;
    }
    out.push_back(r);
  }
  return out;
}

Result<std::unique_ptr<ResultsLog>> ResultsLog::Open(const fs::path& csv, int keep_epochs, bool kd) {
  std::unique_ptr<ResultsLog> log(new ResultsLog());
  log->path_ = csv;
  log->kd_ = kd;
  std::error_code ec;
  if (csv.has_parent_path()) {
    fs::create_directories(csv.parent_path(), ec);
    if (ec) return Status::IOError(Status::At(csv.parent_path().string(), ec.message()));
  }
  if (keep_epochs >= 0 && fs::exists(csv, ec)) {
    YC_ASSIGN_OR_RETURN(std::vector<EpochRecord> old, ReadResultsCsv(csv));
    for (const EpochRecord& r : old) {
      if (r.epoch <= keep_epochs) log->records_.push_back(r);
    }
  }
  // One header for every row: kept rows take this run's layout (a row from before the column existed
  // gets a kd of 0; the column dropped when the run has no teacher).
  for (EpochRecord& r : log->records_) r.has_kd = kd;
  std::string text = ResultsCsvHeader(kd) + "\n";
  for (const EpochRecord& r : log->records_) text += FormatResultsRow(r) + "\n";
  YC_RETURN_IF_ERROR(WriteTextAtomic(csv, text));
  return log;
}

Status ResultsLog::Append(const EpochRecord& record_in) {
  EpochRecord record = record_in;
  record.has_kd = kd_;  // the file's layout decides, so every row matches its header
  std::ofstream out(path_, std::ios::binary | std::ios::app);
  out << FormatResultsRow(record) << "\n";
  out.flush();
  if (!out) return Status::IOError(Status::At(path_.string(), "cannot append"));
  records_.push_back(record);
  return Status::OK();
}

const char* ResultsPlotEncoder() {
  static const std::string name = std::string("PLplot ") + PlotCanvas::Driver() + " + " + PngEncoderName();
  return std::string(PlotCanvas::Driver()) == "none" || std::string(PngEncoderName()) == "none" ? "none" : name.c_str();
}

Status WriteResultsPlot(const std::vector<EpochRecord>& records, const fs::path& png) {
  struct Column {
    const char* title;
    std::function<bool(const EpochRecord&, double*)> value;  // false: no value this epoch
  };
  const std::vector<Column> columns = {
      {"train/box_loss", [](const EpochRecord& r, double* v) { return *v = r.train_loss[0], true; }},
      {"train/cls_loss", [](const EpochRecord& r, double* v) { return *v = r.train_loss[1], true; }},
      {"train/dfl_loss", [](const EpochRecord& r, double* v) { return *v = r.train_loss[2], true; }},
      {"metrics/precision(B)", [](const EpochRecord& r, double* v) { return *v = r.precision, r.validated; }},
      {"metrics/recall(B)", [](const EpochRecord& r, double* v) { return *v = r.recall, r.validated; }},
      {"val/box_loss", [](const EpochRecord& r, double* v) { return *v = r.val_loss[0], r.has_val_loss; }},
      {"val/cls_loss", [](const EpochRecord& r, double* v) { return *v = r.val_loss[1], r.has_val_loss; }},
      {"val/dfl_loss", [](const EpochRecord& r, double* v) { return *v = r.val_loss[2], r.has_val_loss; }},
      {"metrics/mAP50(B)", [](const EpochRecord& r, double* v) { return *v = r.map50, r.validated; }},
      {"metrics/mAP50-95(B)", [](const EpochRecord& r, double* v) { return *v = r.map50_95, r.validated; }},
  };
  std::vector<MetricSeries> panels;
  for (const Column& c : columns) {
    MetricSeries s{c.title, {}, {}};
    for (const EpochRecord& r : records) {
      double v = 0;
      if (c.value(r, &v) && std::isfinite(v)) {
        s.x.push_back(r.epoch);
        s.y.push_back(v);
      }
    }
    panels.push_back(std::move(s));
  }
  return PlotResults(panels, png);
}

}  // namespace yc::trainer
