#include "loader/render/inputs.h"

#include "loader/ops/load_image.h"

namespace yc {

std::string RecordName(uint64_t index, const RecordView* view) {
  std::string name = "record " + std::to_string(index);
  if (view != nullptr && !view->source.empty()) name += " (" + std::string(view->source) + ")";
  return name;
}

Status ReadSubInputs(const RecordSource& source, const SubPlan& plan, int imgsz, int base, RenderScratch* scratch,
                     SubInputs* inputs) {
  inputs->count = plan.mosaic ? 4 : 1;
  for (int i = 0; i < inputs->count; ++i) {
    const uint64_t index = i == 0 ? plan.record : plan.partners[i - 1];
    RecordView& view = scratch->views[base + i];
    view = RecordView();
    if (index >= source.size())
      return Status::InvalidArgument(RecordName(index, nullptr) + ": index out of range (" +
                                     std::to_string(source.size()) + " records)");
    Status st = source.Read(index, &view, &scratch->read[base + i]);
    if (!st.ok()) return st.WithContext("loader: reading " + RecordName(index, nullptr));
    st = LoadImage(view, imgsz, &scratch->resized[base + i], &inputs->images[i]);
    if (!st.ok()) return st.WithContext("loader: " + RecordName(index, &view));
    inputs->boxes[i] = view.boxes;
    inputs->box_counts[i] = view.boxes != nullptr ? view.box_count : 0;
  }
  return Status::OK();
}

}  // namespace yc
