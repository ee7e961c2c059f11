#include "tools/yolocache_train/console_observer.h"

#include <iostream>

#include "tools/yolocache_train/train_cli.h"

namespace yc::cli {

void ConsoleObserver::OnMessage(const std::string& line) {
  EndBar();
  std::cout << line << std::endl;
}

void ConsoleObserver::OnEpochStart(int epoch, int epochs, size_t batches) {
  if (!polling_) polling_.emplace();  // from the first batch on, Train polls the flag (train_command.cc)
  EndBar();
  bar_ = std::make_unique<ProgressBar>("epoch " + std::to_string(epoch) + "/" + std::to_string(epochs), batches, "batch");
}

void ConsoleObserver::OnTrainProgress(const trainer::BatchProgress& p) {
  last_ = p;
  if (!bar_) return;
  std::string s = "box " + F("%.4g", p.loss[0]) + " cls " + F("%.4g", p.loss[1]) + " dfl " + F("%.4g", p.loss[2]) +
                  (p.has_kd ? " kd " + F("%.4g", p.kd_loss) : std::string()) + " | " +
                  F("%.1f", p.images_per_second) + " img/s";
  if (p.gpu_mem_gb > 0) s += " | " + F("%.2f", p.gpu_mem_gb) + "G";
  bar_->Update(p.batch, s);
}

void ConsoleObserver::OnValStart(int, size_t batches) {
  EndBar();
  bar_ = std::make_unique<ProgressBar>("  val", batches, "batch");
}

void ConsoleObserver::OnValProgress(size_t done, size_t) {
  if (bar_) bar_->Update(done);
}

void ConsoleObserver::OnEpochEnd(const trainer::EpochRecord& r) {
  EndBar();
  std::string line = "epoch " + std::to_string(r.epoch) + ": box " + F("%.4f", r.train_loss[0]) + " cls " +
                     F("%.4f", r.train_loss[1]) + " dfl " + F("%.4f", r.train_loss[2]) +
                     (r.has_kd ? " kd " + F("%.4f", r.kd_loss) : std::string()) + " | " +
                     F("%.1f", r.images_per_second > 0 ? r.images_per_second : last_.images_per_second) + " img/s";
  if (r.validated) {
    line += " | P " + F("%.3f", r.precision) + " R " + F("%.3f", r.recall) + " mAP50 " + F("%.3f", r.map50) +
            " mAP50-95 " + F("%.3f", r.map50_95);
  }
  // The run's time so far, then this epoch's three parts: training (the loader's wait inside it), validation,
  // checkpoints (bench/run_rates.py reads them).
  line += " | " + F("%.1f", r.time) + " s (train " + F("%.2f", r.epoch_train_seconds) + " s of which data wait " +
          F("%.2f", r.data_wait_seconds) + " s; val " + F("%.2f", r.val_seconds) + " s; save " +
          F("%.2f", r.save_seconds) + " s" +
          (r.beside_seconds > 0 ? "; beside the next epoch " + F("%.2f", r.beside_seconds) + " s" : std::string()) + ")";
  std::cout << line << std::endl;
}

void ConsoleObserver::EndBar() {
  if (bar_) bar_->Finish();
  bar_.reset();
}

}  // namespace yc::cli
