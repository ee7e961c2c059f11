#include "libcache/source/yaml_bounds.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

namespace yc {
namespace {

// Stops the parse as soon as a bound is passed.
struct OverBound {
  std::string why;
};

// Sums the expanded size of the document: each open collection accumulates its children; an anchored
// node's total is remembered for the aliases to it. Totals saturate just above the bound.
class ExpandedSize final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { Leaf(anchor, 0); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override {
    if (++aliases_ > kMaxYamlAliases) throw OverBound{"more than " + std::to_string(kMaxYamlAliases) + " aliases (*name)"};
    auto it = anchored_.find(anchor);
    Add(it == anchored_.end() ? 0 : it->second);
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    Leaf(anchor, value.size());
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 0});
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor, YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 0});
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    uint64_t bytes;
  };
  static uint64_t Sum(uint64_t a, uint64_t b) { return std::min(a + b, kMaxYamlExpandedBytes + 1); }  // both <= bound + 1
  void Add(uint64_t bytes) {
    total_ = Sum(total_, bytes);
    if (!open_.empty()) open_.back().bytes = Sum(open_.back().bytes, bytes);
    if (total_ > kMaxYamlExpandedBytes) {
      throw OverBound{"its values, aliases (*name) expanded, exceed " + std::to_string(kMaxYamlExpandedBytes >> 20) + " MiB"};
    }
  }
  void Leaf(YAML::anchor_t anchor, uint64_t bytes) {
    if (anchor != YAML::NullAnchor) anchored_[anchor] = std::min(bytes, kMaxYamlExpandedBytes + 1);
    Add(bytes);
  }
  void Close() {
    if (open_.empty()) return;
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) anchored_[done.anchor] = done.bytes;
    // The children were already added to total_; only the enclosing collection's sum grows.
    if (!open_.empty()) open_.back().bytes = Sum(open_.back().bytes, done.bytes);
  }

  std::vector<Open> open_;
  std::unordered_map<YAML::anchor_t, uint64_t> anchored_;
  uint64_t total_ = 0, aliases_ = 0;
};

}  // namespace

Status CheckYamlBounds(const std::string& contents, const std::filesystem::path& yaml) {
  std::istringstream in(contents);
  ExpandedSize size;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(size)) {
    }
  } catch (const OverBound& e) {
    return Status::DataError(Status::At(yaml.string(), "YAML too large: " + e.why));
  } catch (const YAML::Exception&) {
    return Status::OK();  // malformed: YAML::Load says where
  }
  return Status::OK();
}

}  // namespace yc
