// Ultralytics' multi-GPU `device`: `device=0,1`, `device=[0, 1]`, `--device 0,1,2,3` name one CUDA device per
// data-parallel rank (ultralytics/utils/torch_utils.py select_device; engine/trainer.py train() counts the
// items as the world size). One item, or none, is a single device (ParseDevice, device_feed.h).
//
//   DeviceListItems("[0, 1]")   -> {"0", "1"}
//   RankDevice("0,1", env)      -> cuda:1 on LOCAL_RANK 1 (each local rank takes its item)
//
// Indices are CUDA devices as this process sees them, as --device N is: under CUDA_VISIBLE_DEVICES=4,5,6,7
// device=0,1 is the physical 4 and 5. (Ultralytics overwrites CUDA_VISIBLE_DEVICES with the list instead,
// so there its indices are physical ones.)
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "base/status.h"

namespace yc::trainer {

// The items of `device` read as select_device reads them: "cuda:", brackets, parentheses, quotes and
// spaces dropped, then split at commas with empty items skipped ("0,,1" is 0 and 1).
std::vector<std::string> DeviceListItems(const std::string& device);
// More than one item: one data-parallel rank per device.
bool IsDeviceList(const std::string& device);

// Every device of a list, each checked as ParseDevice checks one (a CUDA build, the index present);
// "cpu" or "mps" inside a list and repeated devices are InvalidArgument naming the value.
Result<std::vector<at::Device>> ParseDeviceList(const std::string& device);

// The device of the rank `local_rank` among the `local_world_size` ranks of its host: a list's item
// `local_rank` (the list must name local_world_size devices), else ParseDevice(device).
Result<at::Device> RankDevice(const std::string& device, int local_rank, int local_world_size);

}  // namespace yc::trainer
