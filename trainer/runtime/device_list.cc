#include "trainer/runtime/device_list.h"

#include <algorithm>
#include <cctype>

#include "libcache/base/path_text.h"
#include "trainer/runtime/device_feed.h"

namespace yc::trainer {

std::vector<std::string> DeviceListItems(const std::string& device) {
  std::string s;
  for (char c : device) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const std::string drop : {"cuda:", "(", ")", "[", "]", "'", "\"", " "}) {
    for (size_t at = s.find(drop); at != std::string::npos; at = s.find(drop)) s.erase(at, drop.size());
  }
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) items.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

bool IsDeviceList(const std::string& device) { return DeviceListItems(device).size() > 1; }

Result<std::vector<at::Device>> ParseDeviceList(const std::string& device) {
  std::vector<at::Device> devices;
  for (const std::string& item : DeviceListItems(device)) {
    if (item == "cpu" || item == "mps") {
      return Status::InvalidArgument("--device '" + PrintableText(device) + "': a device list names CUDA devices (0,1); " +
                                     item + " trains in one process (several CPU ranks: --cpu-ranks N)");
    }
    Result<at::Device> d = ParseDevice(item);
    if (!d.ok()) return Status::InvalidArgument("--device '" + PrintableText(device) + "': " + d.status().message());
    if (std::find(devices.begin(), devices.end(), *d) != devices.end()) {
      return Status::InvalidArgument("--device '" + PrintableText(device) + "': device " + item +
                                     " is named twice (one rank per device)");
    }
    devices.push_back(*d);
  }
  return devices;
}

Result<at::Device> RankDevice(const std::string& device, int local_rank, int local_world_size) {
  if (!IsDeviceList(device)) return ParseDevice(device);
  const size_t count = DeviceListItems(device).size();
  if (count != static_cast<size_t>(local_world_size) || local_rank < 0 || local_rank >= local_world_size) {
    return Status::InvalidArgument("--device '" + PrintableText(device) + "' names " + std::to_string(count) +
                                   " devices, one per rank, but this host runs " + std::to_string(local_world_size) +
                                   " ranks (LOCAL_WORLD_SIZE)");
  }
  YC_ASSIGN_OR_RETURN(std::vector<at::Device> devices, ParseDeviceList(device));
  return devices[static_cast<size_t>(local_rank)];
}

}  // namespace yc::trainer
