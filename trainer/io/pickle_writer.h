// A pickle (protocol 2) writer: the opcodes torch.save's Python pickler emits for a checkpoint, so that C++
// can write data.pkl files Python's pickle / torch.load read (the counterpart of trainer/io/pickle.h).
// Values are pushed in pickle VM order; the caller builds containers as the VM does:
//
//   PickleWriter w;                       // PROTO 2
//   w.EmptyDict(); w.Mark();              // {
//   w.Str("epoch"); w.Int(3);             //   'epoch': 3,
//   w.Str("size"); w.Mark(); w.Int(1); w.Int(2); w.Tuple();  // 'size': (1, 2)
//   w.SetItems();                         // }
//   std::string bytes = w.Finish();       // STOP
//
// Globals and short strings repeated are written once and then fetched from the memo (BINPUT / BINGET),
// as Python's pickler does, which keeps a module tree's pickle small.
// Objects: Global(module, name) then arguments then Reduce() (callable(*args)) or NewObj() (cls.__new__),
// then optionally a state and Build(). Nothing is validated beyond what the writer itself controls:
// an unbalanced sequence of calls gives a pickle Python refuses, which the round-trip tests catch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace yc::trainer {

class PickleWriter {
 public:
  PickleWriter();  // writes PROTO 2

  void None();
  void Bool(bool value);
  void Int(int64_t value);   // BININT1 / BININT2 / BININT, LONG1 beyond 32 bits
  void Float(double value);  // BINFLOAT
  void Str(std::string_view utf8);  // BINUNICODE

  void Mark();
  void EmptyTuple();
  void Tuple();   // the values since the last Mark()
  void EmptyList();
  void Appends();  // list.extend(values since the last Mark())
  void EmptyDict();
  void SetItems();  // key, value pairs since the last Mark() into the dict (or OrderedDict) below the mark

  void Global(std::string_view module, std::string_view name);
  void Reduce();  // callable, args tuple -> callable(*args)
  void NewObj();  // cls, args tuple -> cls.__new__(cls, *args)
  void Build();   // object, state -> object.__setstate__(state) (or __dict__.update)
  void BinPersId();  // the value on the stack becomes a persistent id (torch: a storage reference)

  // Memo: Put() remembers the value on top of the stack and returns its id; Get(id) pushes it again.
  uint32_t Put();
  void Get(uint32_t id);

  // STOP, and the pickle's bytes (the writer is empty afterwards).
  std::string Finish();
  size_t size() const { return out_.size(); }

 private:
  void Op(uint8_t op) { out_.push_back(static_cast<char>(op)); }
  // A value pushed before under `key` is pushed again from the memo (as Python's pickler does for the
  // same str or class object); true when it was.
  bool Again(const std::string& key);
  void Remember(const std::string& key);
  void LE(uint64_t value, int bytes);
  std::string out_;
  uint32_t memo_ = 0;
  std::unordered_map<std::string, uint32_t> remembered_;  // "s<text>" / "g<module>\n<name>" -> memo id
};

}  // namespace yc::trainer

namespace yc::trainer {

// A JSON value as the Python value json.loads would give (null -> None, arrays -> lists, objects -> dicts
// with str keys, in the object's order). For nlohmann::json and nlohmann::ordered_json.
template <typename Json>
void PickleJson(PickleWriter& w, const Json& j) {
  if (j.is_null()) {
    w.None();
  } else if (j.is_boolean()) {
    w.Bool(j.template get<bool>());
  } else if (j.is_number_integer()) {
    w.Int(j.template get<int64_t>());
  } else if (j.is_number()) {
    w.Float(j.template get<double>());
  } else if (j.is_string()) {
    w.Str(j.template get_ref<const std::string&>());
  } else if (j.is_array()) {
    w.EmptyList();
    w.Mark();
    for (const auto& item : j) PickleJson(w, item);
    w.Appends();
  } else if (j.is_object()) {
    w.EmptyDict();
    w.Mark();
    for (auto it = j.begin(); it != j.end(); ++it) {
      w.Str(it.key());
      PickleJson(w, it.value());
    }
    w.SetItems();
  } else {  // binary: not produced by our writers
    w.None();
  }
}

}  // namespace yc::trainer
