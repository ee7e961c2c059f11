// A small unpickler for the data.pkl of `torch.save` archives (pickle protocols 2-5), with no Python.
// It runs the pickle VM over every data-carrying opcode and builds a generic object tree: None, bool,
// int, float, str, bytes, tuple, list, dict, set, "global" (a class or function named module.name),
// "object" (a class or function applied: REDUCE / NEWOBJ arguments, BUILD state, SETITEMS/APPENDS), and
// "persistent id" (BINPERSID: torch's storage references). Nothing is imported or called: what a class
// means is up to the reader of the tree (trainer/io/torch_archive.h turns torch's tensors into tensors).
//
//   Result<PickleTree> tree = Unpickle(bytes, "yolov8n.pt/data.pkl");
//   const PyValue& root = tree->at(tree->root());
//
// Never trusts a byte: lengths, memo ids, stack and mark underflow, value types of every opcode's
// operands are checked, and a malformed stream is InvalidArgument/Corruption naming `what` and the byte
// offset. Values live in one arena addressed by index (no recursive destruction, cycles harmless);
// memory is O(input size) since each opcode adds at most one value. Deliberate limits: integers wider
// than 64 bits, the extension registry (EXT1-4) and out-of-band buffers (NEXT_BUFFER) are refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace yc::trainer {

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = 0xffffffffu;

struct PyValue {
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kBytes, kTuple, kList, kDict, kSet, kGlobal, kObject, kPersId };
  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string text;    // str (UTF-8), bytes; kGlobal/kObject: the module ("torch._utils")
  std::string name;    // kGlobal/kObject: the qualified name ("_rebuild_tensor_v2")
  std::vector<ValueId> items;  // tuple/list/set elements; kObject: APPENDS; kPersId: [the pid]
  std::vector<std::pair<ValueId, ValueId>> entries;  // dict items; kObject: SETITEMS
  ValueId args = kNoValue;   // kObject: the argument tuple of REDUCE / NEWOBJ
  ValueId state = kNoValue;  // kObject: BUILD state
};

const char* PyKindName(PyValue::Kind kind);

class PickleTree {
 public:
  ValueId root() const { return root_; }
  // Every id inside the tree is valid (checked while building).
  const PyValue& at(ValueId id) const { return values_[id]; }
  size_t size() const { return values_.size(); }

  // Helpers for readers; all tolerate ids of any kind (a wrong kind is simply "not found" / false).
  bool IsNone(ValueId id) const { return id == kNoValue || values_[id].kind == PyValue::Kind::kNone; }
  // Dict (or dict-like object: an OrderedDict subclass's SETITEMS) lookup by string key; kNoValue if absent.
  ValueId Find(ValueId dict, std::string_view key) const;
  // "module.name" of a kGlobal / kObject, else "".
  std::string ClassName(ValueId id) const;
  // A short description for messages: "int 3", "str 'abc'", "object ultralytics.nn.tasks.SegmentationModel".
  std::string Describe(ValueId id) const;

 private:
  friend class Unpickler;
  std::vector<PyValue> values_;
  ValueId root_ = kNoValue;
};

// Runs `data` (a whole pickle, up to its STOP) into a tree. `what` names the stream in messages.
Result<PickleTree> Unpickle(std::string_view data, const std::string& what);

}  // namespace yc::trainer
