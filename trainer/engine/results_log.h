// Per-epoch results of a run, as Ultralytics writes them: <out>/results.csv (one row per epoch, same
// column names) and <out>/results.png (losses and metrics over epochs, one panel per column).
//
// The plot is drawn with PLplot (trainer/plots/charts.h) and encoded as PNG by OpenCV imgcodecs or libpng;
// a build without PLplot or without a PNG encoder skips it: WriteResultsPlot says so and the run goes on.
#pragma once

#include <array>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace yc::trainer {

struct EpochRecord {
  int epoch = 0;      // 1-based
  double time = 0;    // seconds of training so far (cumulative, as Ultralytics' "time")
  std::array<double, 3> train_loss{};  // mean box, cls, dfl over the epoch's batches
  // A distillation run's (--teacher) mean weighted kd term: results.csv's last column, train/kd_loss,
  // which only such a run's file has (a run without a teacher keeps Ultralytics' 15 columns).
  bool has_kd = false;
  double kd_loss = 0;
  bool validated = false;              // false: the metric cells are empty
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;
  bool has_val_loss = false;
  std::array<double, 3> val_loss{};
  std::array<double, 3> lr{};          // lr/pg0..2 at the end of the epoch
  // Not in results.csv (Ultralytics has no such columns); for the console and the run summary.
  double epoch_train_seconds = 0;      // this epoch's training loop
  double data_wait_seconds = 0;        // of which the loop waited for the loader (0: the loader kept up)
  double images_per_second = 0;        // this epoch's training rate
  double val_seconds = 0;              // this epoch's validation, on the training thread
  double save_seconds = 0;             // checkpoints, results.csv and results.png after it, likewise
  // --val-overlap: the validation and snapshots made on another thread beside the next epoch (0: in line).
  double beside_seconds = 0;
};

// "epoch,time,train/box_loss,...,lr/pg2" (no newline); kd: with ",train/kd_loss" at the end.
std::string ResultsCsvHeader(bool kd = false);
// A row of the file whose header is ResultsCsvHeader(record.has_kd).
std::string FormatResultsRow(const EpochRecord& record);
// The rows as Ultralytics reads results.csv back into its checkpoints' train_results (pandas
// read_csv(...).to_dict(orient="list")): {column: [value per epoch]}, empty cells NaN, epoch an integer;
// train/kd_loss when the records have it.
nlohmann::ordered_json ResultsColumns(const std::vector<EpochRecord>& records);
// Parses a results.csv written by this tool (either header). DataError naming the file and line on
// malformed rows.
Result<std::vector<EpochRecord>> ReadResultsCsv(const std::filesystem::path& path);

class ResultsLog {
 public:
  // Creates <csv> with its header (kd: the distillation column too). keep_epochs >= 0 (resume): an
  // existing file keeps its rows for epochs <= keep_epochs and loses later ones (the checkpoint is older
  // than the CSV); < 0: a new file.
  static Result<std::unique_ptr<ResultsLog>> Open(const std::filesystem::path& csv, int keep_epochs, bool kd = false);

  // Appends one row and flushes it to the file.
  Status Append(const EpochRecord& record);
  const std::vector<EpochRecord>& records() const { return records_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  ResultsLog() = default;
  std::filesystem::path path_;
  bool kd_ = false;
  std::vector<EpochRecord> records_;
};

// Draws the 2 x 5 panel figure (train box/cls/dfl loss, precision, recall; val box/cls/dfl loss, mAP50,
// mAP50-95) and writes it as PNG. Unsupported when this build has no PNG encoder.
Status WriteResultsPlot(const std::vector<EpochRecord>& records, const std::filesystem::path& png);
// "PLplot <driver> + <png encoder>", or "none" when the build cannot draw it.
const char* ResultsPlotEncoder();

}  // namespace yc::trainer
