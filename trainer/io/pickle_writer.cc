#include "trainer/io/pickle_writer.h"

#include <cstring>

namespace yc::trainer {

namespace {

// Opcodes (Python's Lib/pickletools.py names them).
constexpr uint8_t kProto = 0x80, kStop = '.', kNone = 'N', kNewTrue = 0x88, kNewFalse = 0x89;
constexpr uint8_t kBinInt = 'J', kBinInt1 = 'K', kBinInt2 = 'M', kLong1 = 0x8a, kBinFloat = 'G', kBinUnicode = 'X';
constexpr uint8_t kMark = '(', kEmptyTuple = ')', kTuple = 't', kEmptyList = ']', kAppends = 'e';
constexpr uint8_t kEmptyDict = '}', kSetItems = 'u', kGlobal = 'c', kReduce = 'R', kNewObj = 0x81, kBuild = 'b';
constexpr uint8_t kBinPersId = 'Q', kBinPut = 'q', kLongBinPut = 'r', kBinGet = 'h', kLongBinGet = 'j';

}  // namespace

PickleWriter::PickleWriter() {
  Op(kProto);
  Op(2);
}

void PickleWriter::LE(uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void PickleWriter::None() { Op(kNone); }
void PickleWriter::Bool(bool value) { Op(value ? kNewTrue : kNewFalse); }

void PickleWriter::Int(int64_t value) {
  if (value >= 0 && value < 256) {
    Op(kBinInt1);
    LE(static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value < 65536) {
    Op(kBinInt2);
    LE(static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    Op(kBinInt);
    LE(static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(value))), 4);
  } else {
    // LONG1: little-endian two's complement, 8 bytes (enough for any int64).
    Op(kLong1);
    LE(8, 1);
    LE(static_cast<uint64_t>(value), 8);
  }
}

void PickleWriter::Float(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  Op(kBinFloat);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

bool PickleWriter::Again(const std::string& key) {
  auto it = remembered_.find(key);
  if (it == remembered_.end()) return false;
  Get(it->second);
  return true;
}

void PickleWriter::Remember(const std::string& key) { remembered_.emplace(key, Put()); }

void PickleWriter::Str(std::string_view utf8) {
  constexpr size_t kMemoMax = 64;  // names and short values; long texts (JSON) are written once anyway
  const bool memo = utf8.size() <= kMemoMax;
  const std::string key = memo ? "s" + std::string(utf8) : std::string();
  if (memo && Again(key)) return;
  Op(kBinUnicode);
  LE(utf8.size(), 4);
  out_.append(utf8.data(), utf8.size());
  if (memo) Remember(key);
}

void PickleWriter::Mark() { Op(kMark); }
void PickleWriter::EmptyTuple() { Op(kEmptyTuple); }
void PickleWriter::Tuple() { Op(kTuple); }
void PickleWriter::EmptyList() { Op(kEmptyList); }
void PickleWriter::Appends() { Op(kAppends); }
void PickleWriter::EmptyDict() { Op(kEmptyDict); }
void PickleWriter::SetItems() { Op(kSetItems); }

void PickleWriter::Global(std::string_view module, std::string_view name) {
  const std::string key = "g" + std::string(module) + "\n" + std::string(name);
  if (Again(key)) return;
  Op(kGlobal);
  out_.append(module.data(), module.size());
  out_.push_back('\n');
  out_.append(name.data(), name.size());
  out_.push_back('\n');
  Remember(key);
}

void PickleWriter::Reduce() { Op(kReduce); }
void PickleWriter::NewObj() { Op(kNewObj); }
void PickleWriter::Build() { Op(kBuild); }
void PickleWriter::BinPersId() { Op(kBinPersId); }

uint32_t PickleWriter::Put() {
  const uint32_t id = memo_++;
  if (id < 256) {
    Op(kBinPut);
    LE(id, 1);
  } else {
    Op(kLongBinPut);
    LE(id, 4);
  }
  return id;
}

void PickleWriter::Get(uint32_t id) {
  if (id < 256) {
    Op(kBinGet);
    LE(id, 1);
  } else {
    Op(kLongBinGet);
    LE(id, 4);
  }
}

std::string PickleWriter::Finish() {
  Op(kStop);
  std::string out = std::move(out_);
  out_.clear();
  memo_ = 0;
  remembered_.clear();
  return out;
}

}  // namespace yc::trainer
