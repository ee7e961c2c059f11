#include "trainer/eval/predictor.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include <c10/core/GradMode.h>

#include "libcache/base/file_read.h"
#include "libcache/base/output_file.h"
#include "libcache/base/path_json.h"
#include "libcache/build/output_guard.h"
#include "libcache/source/decode.h"
#include "libcache/source/jpeg_encode.h"
#include "loader/ops/letterbox.h"
#include "trainer/eval/annotate.h"
#include "trainer/eval/crops.h"
#include "trainer/eval/feature_maps.h"
#include "trainer/eval/half_precision.h"
#include "trainer/eval/nms.h"
#include "trainer/eval/video_io.h"
#include "trainer/io/checkpoint.h"
#include "trainer/io/pretrained.h"
#include "trainer/model/augmented_inference.h"
#include "trainer/plots/image_file.h"
#include "trainer/runtime/exception_text.h"

namespace yc::trainer {

namespace fs = std::filesystem;

// An image file is read whole; the decoders take int sizes (as the build's audit, libcache/source/audit.cc).
constexpr uint64_t kMaxImageFileBytes = (uint64_t{1} << 31) - 1;

Predictor::~Predictor() = default;

Result<std::unique_ptr<Predictor>> Predictor::Load(const fs::path& checkpoint, const at::Device& device,
                                                   PredictOptions options) {
  // Bounded as everywhere (a letterboxed canvas is imgsz^2 x 3 floats, and more inside the model); the
  // weights' own training imgsz is bounded by ReadModelWeights.
  const auto check_imgsz = [&options] {
    if (options.imgsz >= 32 && options.imgsz % 32 == 0 && options.imgsz <= kMaxImgsz) return Status::OK();
    return Status::InvalidArgument("--imgsz must be 0 (the weights') or a multiple of 32, 32.." + std::to_string(kMaxImgsz) +
                                   ", got " + std::to_string(options.imgsz));
  };
  if (options.imgsz != 0) YC_RETURN_IF_ERROR(check_imgsz());
  if (IsOnnxPath(checkpoint)) return OnnxNotRunnable(checkpoint, "predict");
  InferenceModel loaded;
  std::unique_ptr<TorchScriptModel> script;
  if (IsTorchScriptPath(checkpoint)) {
    YC_ASSIGN_OR_RETURN(TorchScriptModel ts, LoadTorchScriptModel(checkpoint, device));
    YC_RETURN_IF_ERROR(CheckTracedSize(ts, checkpoint, options.imgsz, "predict"));
    loaded.info.names = ts.names;
    loaded.info.imgsz = ts.imgsz[0];
    script = std::make_unique<TorchScriptModel>(std::move(ts));
  } else {
    // Either kind of weights file (a yolocache checkpoint or an Ultralytics .pt), with its class names.
    YC_ASSIGN_OR_RETURN(loaded, LoadInferenceModel(checkpoint, device));
  }
  if (options.imgsz == 0) options.imgsz = loaded.info.imgsz > 0 ? loaded.info.imgsz : 640;
  YC_RETURN_IF_ERROR(check_imgsz());
  if (!(options.conf >= 0 && options.conf < 1) || !(options.iou > 0 && options.iou <= 1) || options.max_det < 1) {
    return Status::InvalidArgument("predict: need 0 <= conf < 1, 0 < iou <= 1, max_det >= 1");
  }
  if (options.line_width < 0) {
    return Status::InvalidArgument("--line-width must be >= 1 (or 0: Ultralytics' default for the image), got " +
                                   std::to_string(options.line_width));
  }
  if (options.vid_stride < 1) {
    return Status::InvalidArgument("--vid-stride must be >= 1 (every N-th video frame), got " + std::to_string(options.vid_stride));
  }
  if (options.visualize && script) {
    return Status::InvalidArgument(Status::At(checkpoint.string(), "--visualize needs .pt weights: a TorchScript export "
                                                                   "runs as one traced graph, its layers' outputs cannot be seen"));
  }
  if (options.visualize && std::string(PngEncoderName()) == "none") {
    return Status::Unsupported("--visualize writes PNG pictures and this build has no PNG encoder (OpenCV imgcodecs or libpng)");
  }
  options.half = HalfApplies(options.half, device);
  if (options.half) {  // AutoBackend's model.half(); the input is cast in Predict
    try {
      if (script) {
        script->module->to(at::kHalf);
        script->half = true;
      } else {
        loaded.model->to(at::kHalf);
      }
    } catch (const std::exception& e) {
      return Status::IOError(Status::At(checkpoint.string(), std::string("cannot convert the model to fp16: ") + ExceptionLine(e)));
    }
  }
  std::unique_ptr<Predictor> p(new Predictor());
  p->device_ = device;
  p->options_ = options;
  p->names_ = loaded.info.names;
  p->model_ = loaded.model;
  p->script_ = std::move(script);
  return p;
}

Result<std::vector<Detection>> Predictor::Predict(const cv::Mat& rgb, const LayerObserver* observe) {
  if (rgb.empty() || rgb.type() != CV_8UC3) return Status::InvalidArgument("predict: expected a non-empty RGB image");
  const int h = rgb.rows, w = rgb.cols, s = options_.imgsz;
  // LetterBox(auto=True): scale the long side to imgsz, pad each side only up to the next multiple of 32.
  // A traced export takes imgsz x imgsz alone (auto=False).
  const double r = std::min(static_cast<double>(s) / h, static_cast<double>(s) / w);
  const int uh = std::max(1, static_cast<int>(PyRound(h * r))), uw = std::max(1, static_cast<int>(PyRound(w * r)));
  const int th = script_ ? s : (uh + 31) / 32 * 32, tw = script_ ? s : (uw + 31) / 32 * 32;
  const LetterboxGeometry g = ComputeLetterbox(h, w, th, tw, /*scaleup=*/true);
  cv::Mat boxed;
  LetterboxImage(rgb, g, &boxed);
  std::vector<Detection> out;
  try {
    c10::NoGradGuard no_grad;
    // HWC uint8 -> (1, 3, H, W) float / 255.
    auto x = at::from_blob(boxed.data, {1, boxed.rows, boxed.cols, 3}, at::kByte)
                 .permute({0, 3, 1, 2})
                 .to(device_, at::kFloat)
                 .div_(255.0)
                 .contiguous();
    if (options_.half && !script_) x = x.to(at::kHalf);  // TorchScriptModel::Forward casts its own input
    // augment first, as Ultralytics' predict(): with augment=True its visualize is not used.
    const at::Tensor pred = script_            ? script_->Forward(x)
                            : options_.augment ? AugmentedForward(*model_, x).pred
                            : observe          ? model_->ForwardObserved(x, *observe).pred
                                               : model_->forward(x).pred;
    NmsOptions nms;
    nms.conf = options_.conf;
    nms.iou = options_.iou;
    nms.max_det = options_.max_det;
    nms.multi_label = false;
    nms.agnostic = options_.agnostic;
    nms.classes = options_.classes;
    nms.end2end = script_ && script_->end2end;  // an nms export's output is its detections
    std::vector<at::Tensor> dets = NonMaxSuppression(pred.to(at::kFloat), nms);
    if (dets.empty()) return out;
    auto d = dets[0].to(at::kCPU).contiguous();
    const float* p = d.data_ptr<float>();
    const float inv = static_cast<float>(1.0 / g.r);
    for (int64_t i = 0; i < d.size(0); ++i, p += 6) {
      Detection det;
      // Letterboxed pixels -> original pixels (Ultralytics scale_boxes), clipped to the image.
      det.x1 = std::clamp((p[0] - static_cast<float>(g.left)) * inv, 0.0f, static_cast<float>(w));
      det.y1 = std::clamp((p[1] - static_cast<float>(g.top)) * inv, 0.0f, static_cast<float>(h));
      det.x2 = std::clamp((p[2] - static_cast<float>(g.left)) * inv, 0.0f, static_cast<float>(w));
      det.y2 = std::clamp((p[3] - static_cast<float>(g.top)) * inv, 0.0f, static_cast<float>(h));
      det.conf = p[4];
      det.cls = static_cast<int>(p[5]);
      out.push_back(det);
    }
  } catch (const std::exception& e) {
    return Status::IOError(std::string("predict: inference failed: ") + ExceptionLine(e));
  }
  return out;
}

namespace {

Status MakeParent(const fs::path& file) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  if (ec) return Status::IOError(Status::At(file.parent_path().string(), ec.message()));
  return Status::OK();
}

// Creates the folders of an output below `save_dir`, refusing one that a link among them would lead
// outside the run folder.
Status MakeParentWithin(const fs::path& file, const fs::path& save_dir) {
  YC_RETURN_IF_ERROR(MakeParent(file));
  return CheckWithinFolder(file.parent_path(), save_dir);
}

// Writes a txt file whole (libcache/base/output_file.h's temp file + rename): never half-written.
Status WriteText(const fs::path& path, const fs::path& save_dir, const std::string& text) {
  YC_RETURN_IF_ERROR(MakeParentWithin(path, save_dir));
  return WriteFileAtomically(path, text);
}

fs::path LabelsPath(const fs::path& save_dir, const PredictInput& input, const std::string& suffix) {
  fs::path rel = input.output;
  rel.replace_extension();
  return save_dir / "labels" / (rel.string() + suffix + ".txt");
}

// The name Ultralytics gives an input's crops: the stem of its txt path's stem (engine/predictor.py passes
// txt_path.stem, so "a.b.jpg" is cropped as "a", and a video frame as "<stem>_<frame>").
std::string CropStem(const PredictInput& input, const std::string& suffix) {
  return fs::path(input.output.stem().string() + suffix).stem().string();
}

// Where Ultralytics saves a video frame with save_frames: <save_dir>/<stem>_frames/<stem>_<frame>.jpg
// (engine/predictor.py save_predicted_images), beside the video's output.
fs::path FramePath(const fs::path& save_dir, const PredictInput& input, int frame) {
  const std::string stem = input.output.stem().string();
  return save_dir / input.output.parent_path() / (stem + "_frames") / (stem + "_" + std::to_string(frame) + ".jpg");
}

}  // namespace

Result<std::vector<Detection>> Predictor::PredictAndVisualize(const cv::Mat& rgb, const PredictInput& input,
                                                              const fs::path& save_dir) {
  if (!options_.visualize) return Predict(rgb);
  FeatureMaps maps;
  const LayerObserver observe = maps.Observer(*model_);
  YC_ASSIGN_OR_RETURN(std::vector<Detection> dets, Predict(rgb, &observe));
  // Ultralytics' folder: save_dir / <source stem>, incremented (engine/predictor.py inference).
  fs::path base = save_dir / input.output;
  base.replace_extension();
  YC_RETURN_IF_ERROR(MakeParentWithin(base, save_dir));
  YC_ASSIGN_OR_RETURN(const fs::path dir, MakeFeatureFolder(base));
  YC_RETURN_IF_ERROR(maps.Save(dir));
  return dets;
}

std::string DetectionLabel(const Detection& d, const std::vector<std::string>& names) {
  char conf[16];
  std::snprintf(conf, sizeof conf, " %.2f", d.conf);
  return (d.cls >= 0 && static_cast<size_t>(d.cls) < names.size() ? names[static_cast<size_t>(d.cls)] : std::to_string(d.cls)) +
         conf;
}

std::string FormatLabelRows(const std::vector<Detection>& dets, int width, int height, bool save_conf) {
  std::string out;
  char buf[160];
  for (const Detection& d : dets) {
    // Ultralytics' Results.save_txt: (cls, *xywhn[, conf]) each formatted "%g", space-separated.
    const double xc = (d.x1 + d.x2) / 2.0 / width, yc = (d.y1 + d.y2) / 2.0 / height;
    const double w = (d.x2 - d.x1) / static_cast<double>(width), h = (d.y2 - d.y1) / static_cast<double>(height);
    int n = std::snprintf(buf, sizeof buf, "%d %g %g %g %g", d.cls, static_cast<float>(xc), static_cast<float>(yc),
                          static_cast<float>(w), static_cast<float>(h));
    if (save_conf) n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), " %g", d.conf);
    out.append(buf, static_cast<size_t>(n));
    out += '\n';
  }
  return out;
}

Result<PredictResult> Predictor::PredictFile(const PredictInput& input, const fs::path& save_dir) {
  const fs::path& image = input.source;
  // A FIFO, device or directory is refused without blocking (an ifstream would wait on a FIFO forever).
  std::string bytes;
  YC_RETURN_IF_ERROR(ReadRegularFile(image, kMaxImageFileBytes, &bytes));
  DecodeOptions dopt;  // full size, EXIF applied: detections are reported in the original image
  DecodedImage decoded = DecodeImage(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), dopt);
  if (!decoded.out_of_memory.empty()) {
    return Status::ResourceExhausted("out of memory while decoding " + image.string() + " (" + decoded.out_of_memory + ")");
  }
  if (decoded.has_error() || decoded.rgb.empty()) {
    std::string why = "cannot decode";
    for (const Issue& issue : decoded.issues) why += std::string("; ") + ProblemCodeName(issue.code) + ": " + issue.message;
    return Status::DataError(Status::At(image.string(), why));
  }
  PredictResult result;
  result.source = image;
  result.width = decoded.rgb.cols;
  result.height = decoded.rgb.rows;
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<Detection>> dets = PredictAndVisualize(decoded.rgb, input, save_dir);
  if (!dets.ok()) return Status(dets.status()).WithContext(image.string());
  result.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  result.detections = std::move(*dets);

  // Crops come from the original pixels, before the boxes are drawn on them.
  if (options_.save_crop) YC_RETURN_IF_ERROR(SaveCrops(result.detections, names_, decoded.rgb, save_dir, CropStem(input, "")));
  cv::Mat canvas = decoded.rgb;
  DrawDetections(result.detections, names_, options_, &canvas);
  result.output = save_dir / input.output;
  YC_RETURN_IF_ERROR(MakeParentWithin(result.output, save_dir));
  // WriteJpeg: temp file + rename; a link or FIFO of that name is refused, never written through.
  YC_RETURN_IF_ERROR(WriteJpeg(result.output, canvas.data, canvas.cols, canvas.rows, options_.jpeg_quality,
                               static_cast<int>(canvas.step)));
  // As Ultralytics: a txt file only for an image with detections.
  if (options_.save_txt && !result.detections.empty()) {
    result.labels = LabelsPath(save_dir, input, "");
    YC_RETURN_IF_ERROR(WriteText(result.labels, save_dir, FormatLabelRows(result.detections, result.width, result.height,
                                                                options_.save_conf)));
  }
  return result;
}

Result<PredictResult> Predictor::PredictVideo(const PredictInput& input, const fs::path& save_dir,
                                              const std::atomic<bool>* cancel) {
  YC_ASSIGN_OR_RETURN(std::unique_ptr<VideoReader> reader, VideoReader::Open(input.source));
  PredictResult result;
  result.source = input.source;
  result.output = save_dir / input.output;
  YC_RETURN_IF_ERROR(MakeParentWithin(result.output, save_dir));
  std::unique_ptr<VideoWriter> writer;
  cv::Mat frame;
  double ms = 0;
  // As LoadImagesAndVideos: vid_stride grabs, the last one decoded.
  while (reader->Skip(options_.vid_stride - 1) && reader->Next(&frame)) {
    if (cancel != nullptr && cancel->load()) break;
    if (!writer) {
      result.width = frame.cols;
      result.height = frame.rows;
      YC_ASSIGN_OR_RETURN(writer, VideoWriter::Open(result.output, reader->fps(), frame.size()));
    }
    if (frame.cols != result.width || frame.rows != result.height) {
      return Status::DataError(Status::At(input.source.string(), "frame " + std::to_string(result.frames + 1) +
                                                                     " changes the video's size"));
    }
    const auto t0 = std::chrono::steady_clock::now();
    Result<std::vector<Detection>> dets = PredictAndVisualize(frame, input, save_dir);
    if (!dets.ok()) return Status(dets.status()).WithContext(input.source.string());
    ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++result.frames;
    if (options_.save_crop) {
      YC_RETURN_IF_ERROR(SaveCrops(*dets, names_, frame, save_dir, CropStem(input, "_" + std::to_string(result.frames))));
    }
    DrawDetections(*dets, names_, options_, &frame);
    YC_RETURN_IF_ERROR(writer->Write(frame));
    if (options_.save_frames) {
      const fs::path still = FramePath(save_dir, input, result.frames);
      YC_RETURN_IF_ERROR(MakeParentWithin(still, save_dir));
      YC_RETURN_IF_ERROR(WriteJpeg(still, frame.data, frame.cols, frame.rows, options_.jpeg_quality, static_cast<int>(frame.step)));
    }
    // Ultralytics names a video's label files <stem>_<frame>.txt, frames counted from 1.
    if (options_.save_txt && !dets->empty()) {
      YC_RETURN_IF_ERROR(WriteText(LabelsPath(save_dir, input, "_" + std::to_string(result.frames)), save_dir,
                                   FormatLabelRows(*dets, frame.cols, frame.rows, options_.save_conf)));
    }
    result.detections.insert(result.detections.end(), dets->begin(), dets->end());
  }
  // An interrupted video is discarded (the writer's destructor removes its temp file): a truncated file
  // never takes the output's name, nor replaces a complete earlier result (--exist-ok).
  if (cancel != nullptr && cancel->load()) {
    return Status::Cancelled("interrupted in " + input.source.string() + " after " + std::to_string(result.frames) +
                             " frames; its partial video was discarded");
  }
  if (!writer) return Status::DataError(Status::At(input.source.string(), "no frame could be read"));
  YC_RETURN_IF_ERROR(writer->Close());
  if (options_.save_txt) result.labels = LabelsPath(save_dir, input, "_*");
  result.milliseconds = ms;
  return result;
}

namespace {

// The names given out so far, so that neither the annotated outputs nor their label files can collide:
// an image's labels/<dir>/<stem>.txt must never be a video's labels/<dir>/<stem>_<frame>.txt
// (Ultralytics' engine/predictor.py names both that way: clip_1.jpg and clip.mp4 frame 1 would share
// labels/clip_1.txt), so a video stem V and an image stem V_<digits> exclude each other.
class OutputNames {
 public:
  bool Taken(const fs::path& dir, const std::string& stem, const std::string& ext, bool video) const {
    const std::string key = (dir / stem).string();
    if (outputs_.count((dir / (stem + ext)).string()) > 0) return true;
    if (video) return video_keys_.count(key) > 0 || numbered_prefixes_.count(key) > 0;
    const std::string prefix = NumberedPrefix(key);
    return image_keys_.count(key) > 0 || (!prefix.empty() && video_keys_.count(prefix) > 0);
  }
  void Take(const fs::path& dir, const std::string& stem, const std::string& ext, bool video) {
    const std::string key = (dir / stem).string();
    outputs_.insert((dir / (stem + ext)).string());
    if (video) {
      video_keys_.insert(key);
    } else {
      image_keys_.insert(key);
      if (const std::string prefix = NumberedPrefix(key); !prefix.empty()) numbered_prefixes_.insert(prefix);
    }
  }

 private:
  // "clip" for "clip_12", "" when the name does not end in _<digits>.
  static std::string NumberedPrefix(const std::string& key) {
    const size_t us = key.rfind('_');
    if (us == std::string::npos || us + 1 == key.size()) return "";
    for (size_t i = us + 1; i < key.size(); ++i) {
      if (key[i] < '0' || key[i] > '9') return "";
    }
    return key.substr(0, us);
  }
  std::set<std::string> outputs_, image_keys_, video_keys_, numbered_prefixes_;
};

}  // namespace

Result<std::vector<PredictInput>> ExpandPredictInputs(const std::vector<std::string>& inputs) {
  static const char* kExt[] = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"};
  auto is_image = [](const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::find(std::begin(kExt), std::end(kExt), ext) != std::end(kExt);
  };
  // (source, relative path it came with)
  std::vector<std::pair<fs::path, fs::path>> found;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::path p(in);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        if (is_image(it->path()) || IsVideoFile(it->path())) files.push_back(it->path());
      }
      if (ec) return Status::IOError(Status::At(in, "cannot list: " + ec.message()));
      std::sort(files.begin(), files.end());
      for (const fs::path& f : files) found.emplace_back(f, f.lexically_relative(p));
    } else if (fs::exists(p, ec)) {
      found.emplace_back(p, p.filename());
    } else {
      return Status::NotFound(Status::At(in, "no such file or directory"));
    }
  }
  std::vector<PredictInput> out;
  OutputNames names;
  for (const auto& [source, rel] : found) {
    PredictInput item;
    item.source = source;
    item.video = IsVideoFile(source);
    const std::string ext = item.video ? VideoOutputExtension() : ".jpg";
    const fs::path dir = rel.parent_path();
    const std::string stem = rel.stem().string();
    std::string src_ext = rel.extension().string();
    std::transform(src_ext.begin(), src_ext.end(), src_ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string candidate = stem;
    // img.png beside img.jpg -> img_png.jpg; the same name twice -> img_2.jpg.
    if (names.Taken(dir, candidate, ext, item.video) && src_ext.size() > 1 && src_ext != ext && src_ext != ".jpeg") {
      candidate = stem + "_" + src_ext.substr(1);
    }
    for (int n = 2; names.Taken(dir, candidate, ext, item.video); ++n) candidate = stem + "_" + std::to_string(n);
    names.Take(dir, candidate, ext, item.video);
    item.output = dir / (candidate + ext);
    out.push_back(std::move(item));
  }
  return out;
}

Status CheckPredictOutputs(const std::vector<PredictInput>& inputs, const fs::path& save_dir) {
  YC_RETURN_IF_ERROR(CheckOutsideCaches(save_dir));
  std::set<std::pair<dev_t, ino_t>> input_files;
  for (const PredictInput& in : inputs) {
    if (IsWithin(in.source, save_dir)) {
      return Status::InvalidArgument(Status::At(save_dir.string(), "holds the input " + in.source.string() +
                                                                       "; results would replace inputs (choose another "
                                                                       "--out, or --project/--name outside the inputs)"));
    }
    struct stat st {};
    if (::stat(in.source.c_str(), &st) == 0) input_files.emplace(st.st_dev, st.st_ino);
  }
  // A hard link (or a link below the run folder) can still make an output one of the inputs.
  for (const PredictInput& in : inputs) {
    const fs::path out = save_dir / in.output;
    struct stat st {};
    if (::stat(out.c_str(), &st) == 0 && input_files.count({st.st_dev, st.st_ino}) > 0) {
      return Status::InvalidArgument(Status::At(out.string(), "is one of the inputs (a link); results never replace inputs"));
    }
  }
  return Status::OK();
}

nlohmann::json PredictResultToJson(const PredictResult& r, const std::vector<std::string>& names) {
  nlohmann::json dets = nlohmann::json::array();
  for (const Detection& d : r.detections) {
    dets.push_back({{"class", d.cls},
                    {"name", d.cls >= 0 && static_cast<size_t>(d.cls) < names.size()
                                 ? PrintableText(names[static_cast<size_t>(d.cls)])  // a weights file's bytes
                                 : std::to_string(d.cls)},
                    {"confidence", d.conf},
                    {"box", {d.x1, d.y1, d.x2, d.y2}}});
  }
  nlohmann::json j = {{"width", r.width}, {"height", r.height}, {"ms", r.milliseconds}, {"detections", dets}};
  SetPathField(j, "source", r.source.string());  // a name that is not UTF-8 stays exact, as in our other JSON
  SetPathField(j, "output", r.output.string());
  if (!r.labels.empty()) SetPathField(j, "labels", r.labels.string());
  if (r.frames > 0) j["frames"] = r.frames;
  return j;
}

}  // namespace yc::trainer
