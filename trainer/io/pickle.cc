#include "trainer/io/pickle.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace yc::trainer {

namespace {

using Kind = PyValue::Kind;

// Reads little-endian integers from a byte pointer (the caller checked the length).
uint64_t LoadLE(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* PyKindName(Kind kind) {
  switch (kind) {
    case Kind::kNone: return "None";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kStr: return "str";
    case Kind::kBytes: return "bytes";
    case Kind::kTuple: return "tuple";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
    case Kind::kSet: return "set";
    case Kind::kGlobal: return "global";
    case Kind::kObject: return "object";
    case Kind::kPersId: return "persistent id";
  }
  return "?";
}

ValueId PickleTree::Find(ValueId dict, std::string_view key) const {
  if (dict == kNoValue) return kNoValue;
  const PyValue& d = values_[dict];
  if (d.kind != Kind::kDict && d.kind != Kind::kObject) return kNoValue;
  // Later SETITEMs win, as in Python.
  for (auto it = d.entries.rbegin(); it != d.entries.rend(); ++it) {
    const PyValue& k = values_[it->first];
    if (k.kind == Kind::kStr && k.text == key) return it->second;
  }
  return kNoValue;
}

std::string PickleTree::ClassName(ValueId id) const {
  if (id == kNoValue) return "";
  const PyValue& v = values_[id];
  if (v.kind != Kind::kGlobal && v.kind != Kind::kObject) return "";
  return v.text + "." + v.name;
}

std::string PickleTree::Describe(ValueId id) const {
  if (id == kNoValue) return "nothing";
  const PyValue& v = values_[id];
  switch (v.kind) {
    case Kind::kBool: return v.boolean ? "True" : "False";
    case Kind::kInt: return "int " + std::to_string(v.integer);
    case Kind::kStr: return "str '" + (v.text.size() > 40 ? v.text.substr(0, 40) + "..." : v.text) + "'";
    case Kind::kGlobal: return "global " + ClassName(id);
    case Kind::kObject: return "object " + ClassName(id);
    default: return PyKindName(v.kind);
  }
}

class Unpickler {
 public:
  Unpickler(std::string_view data, const std::string& what)
      : p_(reinterpret_cast<const unsigned char*>(data.data())), n_(data.size()), what_(what) {}

  Result<PickleTree> Run();

 private:
  Status Bad(const std::string& why) const {
    return Status::IOError(what_ + ": malformed pickle at byte " + std::to_string(op_pos_) + ": " + why);
  }
  bool Need(size_t k) const { return k <= n_ - pos_; }
  ValueId New(Kind kind) {
    tree_.values_.emplace_back();
    tree_.values_.back().kind = kind;
    return static_cast<ValueId>(tree_.values_.size() - 1);
  }
  PyValue& V(ValueId id) { return tree_.values_[id]; }
  Status Pop(ValueId* out) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) return Bad("stack underflow");
    *out = stack_.back();
    stack_.pop_back();
    return Status::OK();
  }
  Status Top(ValueId* out) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) return Bad("stack underflow");
    *out = stack_.back();
    return Status::OK();
  }
  // Pops everything above the latest MARK (and the mark).
  Status PopMark(std::vector<ValueId>* out) {
    if (marks_.empty()) return Bad("no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    out->assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return Status::OK();
  }
  Status ReadBytes(size_t len, std::string* out) {
    if (!Need(len)) return Bad("length " + std::to_string(len) + " runs past the end of the stream");
    out->assign(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return Status::OK();
  }
  Status ReadUInt(int width, uint64_t* v) {
    if (!Need(static_cast<size_t>(width))) return Bad("truncated operand");
    *v = LoadLE(p_ + pos_, width);
    pos_ += static_cast<size_t>(width);
    return Status::OK();
  }
  Status ReadLine(std::string* out) {
    const void* nl = std::memchr(p_ + pos_, '\n', n_ - pos_);
    if (nl == nullptr) return Bad("unterminated text operand");
    const size_t end = static_cast<size_t>(static_cast<const unsigned char*>(nl) - p_);
    out->assign(reinterpret_cast<const char*>(p_ + pos_), end - pos_);
    pos_ = end + 1;
    return Status::OK();
  }
  Status Memo(uint64_t id, ValueId* out) {
    auto it = memo_.find(id);
    if (it == memo_.end()) return Bad("memo id " + std::to_string(id) + " was never stored");
    *out = it->second;
    return Status::OK();
  }
  Status Put(uint64_t id) {
    ValueId top = kNoValue;
    YC_RETURN_IF_ERROR(Top(&top));
    memo_[id] = top;
    return Status::OK();
  }
  Status PushInt(int64_t v) {
    ValueId id = New(Kind::kInt);
    V(id).integer = v;
    stack_.push_back(id);
    return Status::OK();
  }
  Status PushText(Kind kind, std::string text) {
    ValueId id = New(kind);
    V(id).text = std::move(text);
    stack_.push_back(id);
    return Status::OK();
  }
  Status PushBool(bool v) {
    ValueId id = New(Kind::kBool);
    V(id).boolean = v;
    stack_.push_back(id);
    return Status::OK();
  }
  Status PushFloat(double v) {
    ValueId id = New(Kind::kFloat);
    V(id).real = v;
    stack_.push_back(id);
    return Status::OK();
  }
  Status PushLong(size_t len);
  Status PushTextInt(unsigned char op);
  Status PushBinFloat();
  Status PushTextFloat();
  Status PushTuple(size_t k);
  Status PushGlobal(std::string module, std::string name);
  Status Apply(ValueId callable, ValueId args);  // REDUCE / NEWOBJ
  Status SetItems(ValueId target, const std::vector<ValueId>& kv);
  Status Append(ValueId target, const std::vector<ValueId>& items);
  Status ReadMemoId(unsigned char op, unsigned char text_op, unsigned char one_byte_op, uint64_t* id);

  // One handler per opcode group. Each returns std::nullopt for an opcode outside its group, else the
  // opcode's outcome; Run offers every opcode to each group in turn.
  std::optional<Status> StreamOp(unsigned char op);     // PROTO, FRAME, MARK, POP, POP_MARK, DUP, READONLY_BUFFER
  std::optional<Status> ScalarOp(unsigned char op);     // None, bools, ints, floats
  std::optional<Status> StringOp(unsigned char op);     // str and bytes
  std::optional<Status> ContainerOp(unsigned char op);  // tuples, lists, dicts, sets and their updates
  std::optional<Status> ObjectOp(unsigned char op);     // globals, calls, BUILD, persistent ids
  std::optional<Status> MemoOp(unsigned char op);       // GET, PUT, MEMOIZE
  Status Unsupported(unsigned char op) const;

  const unsigned char* p_;
  size_t n_;
  size_t pos_ = 0, op_pos_ = 0;
  std::string what_;
  PickleTree tree_;
  std::vector<ValueId> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK
  std::unordered_map<uint64_t, ValueId> memo_;
  size_t copied_ = 0;
  std::vector<ValueId> tmp_;  // what PopMark took, reused between opcodes
};

Status Unpickler::PushLong(size_t len) {
  if (len > 8) return Bad("integer of " + std::to_string(len) + " bytes does not fit 64 bits");
  std::string b;
  YC_RETURN_IF_ERROR(ReadBytes(len, &b));
  uint64_t u = 0;
  for (size_t i = len; i-- > 0;) u = (u << 8) | static_cast<unsigned char>(b[i]);
  if (len > 0 && len < 8 && (static_cast<unsigned char>(b[len - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * len);  // sign
  return PushInt(static_cast<int64_t>(u));
}

Status Unpickler::PushGlobal(std::string module, std::string name) {
  // Python 2 module names as Python 3's pickle maps them (fix_imports).
  if (module == "__builtin__") module = "builtins";
  ValueId id = New(Kind::kGlobal);
  V(id).text = std::move(module);
  V(id).name = std::move(name);
  stack_.push_back(id);
  return Status::OK();
}

Status Unpickler::Apply(ValueId callable, ValueId args) {
  const PyValue& c = V(callable);
  if (c.kind != Kind::kGlobal) return Bad(std::string("cannot call a ") + PyKindName(c.kind));
  if (V(args).kind != Kind::kTuple) return Bad("call arguments are not a tuple");
  const std::string cls = c.text + "." + c.name;
  // Only the first two arguments are ever looked at here: no copy of a long argument tuple per call.
  const size_t nargs = V(args).items.size();
  std::vector<ValueId> a(V(args).items.begin(), V(args).items.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(nargs, 2)));
  // The few builtins whose value is data, not an object: containers and bytes.
  if (cls == "collections.OrderedDict" || cls == "builtins.dict") {
    if (nargs != 0) return Bad(cls + " with constructor arguments is not supported");
    stack_.push_back(New(Kind::kDict));
    return Status::OK();
  }
  if (cls == "builtins.set" || cls == "builtins.frozenset" || cls == "builtins.list" || cls == "builtins.tuple") {
    const Kind kind = cls == "builtins.list" ? Kind::kList : cls == "builtins.tuple" ? Kind::kTuple : Kind::kSet;
    ValueId id = New(kind);
    if (nargs > 1) return Bad(cls + " takes at most one argument");
    if (nargs == 1) {
      const PyValue& src = V(a[0]);
      if (src.kind != Kind::kList && src.kind != Kind::kTuple && src.kind != Kind::kSet) {
        return Bad(cls + " of a " + PyKindName(src.kind));
      }
      // Copies are the one place the arena could grow faster than the input: bounded in total.
      copied_ += src.items.size();
      if (copied_ > 4 * n_ + 1024) return Bad("too many container copies");
      std::vector<ValueId> items = src.items;
      V(id).items = std::move(items);
    }
    stack_.push_back(id);
    return Status::OK();
  }
  if (cls == "_codecs.encode") {  // protocol 2's bytes: encode(str, 'latin1')
    if (nargs != 2 || V(a[0]).kind != Kind::kStr || V(a[1]).kind != Kind::kStr) return Bad("bad _codecs.encode call");
    if (V(a[1]).text != "latin1" && V(a[1]).text != "latin-1") return Bad("_codecs.encode with " + V(a[1]).text);
    std::string out;
    const std::string& s = V(a[0]).text;
    for (size_t i = 0; i < s.size(); ++i) {  // UTF-8 code points < 256 back to bytes
      const unsigned char ch = static_cast<unsigned char>(s[i]);
      if (ch < 0x80) {
        out.push_back(static_cast<char>(ch));
      } else if ((ch & 0xe0) == 0xc0 && i + 1 < s.size() && ch <= 0xc3) {
        out.push_back(static_cast<char>(((ch & 0x1f) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3f)));
        ++i;
      } else {
        return Bad("_codecs.encode: a code point above 255");
      }
    }
    return PushText(Kind::kBytes, std::move(out));
  }
  ValueId id = New(Kind::kObject);
  V(id).text = V(callable).text;
  V(id).name = V(callable).name;
  V(id).args = args;
  stack_.push_back(id);
  return Status::OK();
}

Status Unpickler::SetItems(ValueId target, const std::vector<ValueId>& kv) {
  PyValue& t = V(target);
  if (t.kind != Kind::kDict && t.kind != Kind::kObject) return Bad(std::string("SETITEM on a ") + PyKindName(t.kind));
  if (kv.size() % 2 != 0) return Bad("SETITEMS with an odd number of values");
  for (size_t i = 0; i < kv.size(); i += 2) t.entries.emplace_back(kv[i], kv[i + 1]);
  return Status::OK();
}

Status Unpickler::Append(ValueId target, const std::vector<ValueId>& items) {
  PyValue& t = V(target);
  if (t.kind != Kind::kList && t.kind != Kind::kSet && t.kind != Kind::kObject) {
    return Bad(std::string("APPEND on a ") + PyKindName(t.kind));
  }
  t.items.insert(t.items.end(), items.begin(), items.end());
  return Status::OK();
}

Status Unpickler::PushTextInt(unsigned char op) {  // INT / LONG (text): "I01\n" / "I00\n" are True / False
  std::string s;
  YC_RETURN_IF_ERROR(ReadLine(&s));
  if (op == 'L' && !s.empty() && s.back() == 'L') s.pop_back();
  if (op == 'I' && (s == "01" || s == "00")) return PushBool(s == "01");
  if (s.empty() || s.size() > 20) return Bad("bad integer text");
  size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (i == s.size()) return Bad("bad integer text");
  for (size_t k = i; k < s.size(); ++k) if (s[k] < '0' || s[k] > '9') return Bad("bad integer text");
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return Bad("integer does not fit 64 bits");
  return PushInt(v);
}

Status Unpickler::PushBinFloat() {  // BINFLOAT: big-endian double
  if (!Need(8)) return Bad("truncated operand");
  uint64_t bits = 0;
  for (int k = 0; k < 8; ++k) bits = (bits << 8) | p_[pos_ + static_cast<size_t>(k)];
  pos_ += 8;
  double d;
  std::memcpy(&d, &bits, 8);
  return PushFloat(d);
}

Status Unpickler::PushTextFloat() {  // FLOAT (text)
  std::string s;
  YC_RETURN_IF_ERROR(ReadLine(&s));
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return Bad("bad float text");
  return PushFloat(d);
}

Status Unpickler::PushTuple(size_t k) {  // TUPLE1-3: the top k values
  if (stack_.size() < k || (!marks_.empty() && stack_.size() - k < marks_.back())) return Bad("stack underflow");
  const ValueId id = New(Kind::kTuple);
  V(id).items.assign(stack_.end() - static_cast<std::ptrdiff_t>(k), stack_.end());
  stack_.resize(stack_.size() - k);
  stack_.push_back(id);
  return Status::OK();
}

// The memo id operand of GET / PUT: a decimal line for the text opcode, else 1 or 4 bytes.
Status Unpickler::ReadMemoId(unsigned char op, unsigned char text_op, unsigned char one_byte_op, uint64_t* id) {
  if (op != text_op) return ReadUInt(op == one_byte_op ? 1 : 4, id);
  std::string s;
  YC_RETURN_IF_ERROR(ReadLine(&s));
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return Bad("bad memo id");
  *id = std::stoull(s);
  return Status::OK();
}

std::optional<Status> Unpickler::StreamOp(unsigned char op) {
  uint64_t u = 0;
  ValueId a = 0;
  switch (op) {
    case 0x80:  // PROTO
      YC_RETURN_IF_ERROR(ReadUInt(1, &u));
      if (u > 5) return Bad("pickle protocol " + std::to_string(u) + " is newer than 5");
      return Status::OK();
    case 0x95:  // FRAME: an 8-byte length, the frame's opcodes follow inline
      YC_RETURN_IF_ERROR(ReadUInt(8, &u));
      if (u > n_ - pos_) return Bad("frame runs past the end of the stream");
      return Status::OK();
    case '(': marks_.push_back(stack_.size()); return Status::OK();  // MARK
    case '0': return Pop(&a);                                       // POP
    case '1': return PopMark(&tmp_);                                // POP_MARK
    case '2':                                                       // DUP
      YC_RETURN_IF_ERROR(Top(&a));
      stack_.push_back(a);
      return Status::OK();
    case 0x98: return Top(&a);  // READONLY_BUFFER: no effect on a copy
    default: return std::nullopt;
  }
}

std::optional<Status> Unpickler::ScalarOp(unsigned char op) {
  uint64_t u = 0;
  switch (op) {
    case 'N': stack_.push_back(New(Kind::kNone)); return Status::OK();
    case 0x88: case 0x89: return PushBool(op == 0x88);  // NEWTRUE, NEWFALSE
    case 'J':  // BININT
      YC_RETURN_IF_ERROR(ReadUInt(4, &u));
      return PushInt(static_cast<int32_t>(static_cast<uint32_t>(u)));
    case 'K': case 'M':  // BININT1, BININT2
      YC_RETURN_IF_ERROR(ReadUInt(op == 'K' ? 1 : 2, &u));
      return PushInt(static_cast<int64_t>(u));
    case 0x8a:  // LONG1
      YC_RETURN_IF_ERROR(ReadUInt(1, &u));
      return PushLong(u);
    case 0x8b:  // LONG4
      YC_RETURN_IF_ERROR(ReadUInt(4, &u));
      if (static_cast<int32_t>(static_cast<uint32_t>(u)) < 0) return Bad("negative LONG4 length");
      return PushLong(u);
    case 'I': case 'L': return PushTextInt(op);
    case 'G': return PushBinFloat();
    case 'F': return PushTextFloat();
    default: return std::nullopt;
  }
}

std::optional<Status> Unpickler::StringOp(unsigned char op) {
  uint64_t u = 0;
  std::string s;
  Kind kind = Kind::kBytes;
  switch (op) {
    case 'X': case 0x8c: case 0x8d:  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
      kind = Kind::kStr;
      YC_RETURN_IF_ERROR(ReadUInt(op == 0x8c ? 1 : op == 'X' ? 4 : 8, &u));
      break;
    case 'B': case 'C': case 0x8e: case 0x96:  // BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8
      YC_RETURN_IF_ERROR(ReadUInt(op == 'C' ? 1 : op == 'B' ? 4 : 8, &u));
      break;
    case 'T': case 'U':  // BINSTRING, SHORT_BINSTRING (Python 2 str: bytes)
      YC_RETURN_IF_ERROR(ReadUInt(op == 'U' ? 1 : 4, &u));
      if (op == 'T' && static_cast<int32_t>(static_cast<uint32_t>(u)) < 0) return Bad("negative BINSTRING length");
      break;
    default: return std::nullopt;
  }
  YC_RETURN_IF_ERROR(ReadBytes(u, &s));
  return PushText(kind, std::move(s));
}

std::optional<Status> Unpickler::ContainerOp(unsigned char op) {
  ValueId a = 0, b = 0, c = 0;
  switch (op) {
    case ')': stack_.push_back(New(Kind::kTuple)); return Status::OK();  // EMPTY_TUPLE
    case ']': stack_.push_back(New(Kind::kList)); return Status::OK();   // EMPTY_LIST
    case '}': stack_.push_back(New(Kind::kDict)); return Status::OK();   // EMPTY_DICT
    case 0x8f: stack_.push_back(New(Kind::kSet)); return Status::OK();   // EMPTY_SET
    case 0x85: case 0x86: case 0x87: return PushTuple(op - 0x84u);       // TUPLE1-3
    case 't': case 'l': case 0x91:  // TUPLE, LIST, FROZENSET (from MARK)
      YC_RETURN_IF_ERROR(PopMark(&tmp_));
      a = New(op == 't' ? Kind::kTuple : op == 'l' ? Kind::kList : Kind::kSet);
      V(a).items = tmp_;
      stack_.push_back(a);
      return Status::OK();
    case 'd':  // DICT (from MARK)
      YC_RETURN_IF_ERROR(PopMark(&tmp_));
      a = New(Kind::kDict);
      YC_RETURN_IF_ERROR(SetItems(a, tmp_));
      stack_.push_back(a);
      return Status::OK();
    case 'a':  // APPEND
      YC_RETURN_IF_ERROR(Pop(&b));
      YC_RETURN_IF_ERROR(Top(&a));
      return Append(a, {b});
    case 'e': case 0x90:  // APPENDS, ADDITEMS
      YC_RETURN_IF_ERROR(PopMark(&tmp_));
      YC_RETURN_IF_ERROR(Top(&a));
      return Append(a, tmp_);
    case 's':  // SETITEM
      YC_RETURN_IF_ERROR(Pop(&c));
      YC_RETURN_IF_ERROR(Pop(&b));
      YC_RETURN_IF_ERROR(Top(&a));
      return SetItems(a, {b, c});
    case 'u':  // SETITEMS
      YC_RETURN_IF_ERROR(PopMark(&tmp_));
      YC_RETURN_IF_ERROR(Top(&a));
      return SetItems(a, tmp_);
    default: return std::nullopt;
  }
}

std::optional<Status> Unpickler::ObjectOp(unsigned char op) {
  ValueId a = 0, b = 0, c = 0;
  std::string s, s2;
  switch (op) {
    case 'c':  // GLOBAL "module\nname\n"
      YC_RETURN_IF_ERROR(ReadLine(&s));
      YC_RETURN_IF_ERROR(ReadLine(&s2));
      return PushGlobal(std::move(s), std::move(s2));
    case 0x93:  // STACK_GLOBAL
      YC_RETURN_IF_ERROR(Pop(&b));
      YC_RETURN_IF_ERROR(Pop(&a));
      if (V(a).kind != Kind::kStr || V(b).kind != Kind::kStr) return Bad("STACK_GLOBAL of non-strings");
      return PushGlobal(V(a).text, V(b).text);
    case 'R': case 0x81:  // REDUCE (callable, args), NEWOBJ (cls, args)
      YC_RETURN_IF_ERROR(Pop(&b));
      YC_RETURN_IF_ERROR(Pop(&a));
      return Apply(a, b);
    case 0x92:  // NEWOBJ_EX (cls, args, kwargs): keyword arguments are not kept
      YC_RETURN_IF_ERROR(Pop(&c));
      YC_RETURN_IF_ERROR(Pop(&b));
      YC_RETURN_IF_ERROR(Pop(&a));
      if (V(c).kind != Kind::kDict) return Bad("NEWOBJ_EX keyword arguments are not a dict");
      return Apply(a, b);
    case 'o':  // OBJ: MARK cls args...
      YC_RETURN_IF_ERROR(PopMark(&tmp_));
      if (tmp_.empty()) return Bad("OBJ without a class");
      b = New(Kind::kTuple);
      V(b).items.assign(tmp_.begin() + 1, tmp_.end());
      return Apply(tmp_[0], b);
    case 'b':  // BUILD
      YC_RETURN_IF_ERROR(Pop(&b));
      YC_RETURN_IF_ERROR(Top(&a));
      if (V(a).kind != Kind::kObject) return Bad(std::string("BUILD on a ") + PyKindName(V(a).kind));
      V(a).state = b;
      return Status::OK();
    case 'Q':  // BINPERSID
      YC_RETURN_IF_ERROR(Pop(&b));
      break;
    case 'P':  // PERSID (text)
      YC_RETURN_IF_ERROR(ReadLine(&s));
      b = New(Kind::kStr);
      V(b).text = std::move(s);
      break;
    default: return std::nullopt;
  }
  a = New(Kind::kPersId);  // BINPERSID, PERSID: the persistent id b
  V(a).items.push_back(b);
  stack_.push_back(a);
  return Status::OK();
}

std::optional<Status> Unpickler::MemoOp(unsigned char op) {
  uint64_t u = 0;
  ValueId a = 0;
  switch (op) {
    case 'h': case 'j': case 'g':  // BINGET, LONG_BINGET, GET (text)
      YC_RETURN_IF_ERROR(ReadMemoId(op, 'g', 'h', &u));
      YC_RETURN_IF_ERROR(Memo(u, &a));
      stack_.push_back(a);
      return Status::OK();
    case 'q': case 'r': case 'p':  // BINPUT, LONG_BINPUT, PUT (text)
      YC_RETURN_IF_ERROR(ReadMemoId(op, 'p', 'q', &u));
      return Put(u);
    case 0x94: return Put(memo_.size());  // MEMOIZE
    default: return std::nullopt;
  }
}

Status Unpickler::Unsupported(unsigned char op) const {
  switch (op) {
    case 0x82: case 0x83: case 0x84: return Bad("extension-registry opcode (EXT1/2/4) is not supported");
    case 0x97: return Bad("out-of-band buffer (NEXT_BUFFER) is not supported");
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      return Bad(std::string("unknown or unsupported opcode ") + hex);
    }
  }
}

Result<PickleTree> Unpickler::Run() {
  // Every opcode adds at most one value, so the arena never outgrows the input.
  if (n_ >= kNoValue) return Bad("stream too large");
  using Group = std::optional<Status> (Unpickler::*)(unsigned char);
  static constexpr Group kGroups[] = {&Unpickler::StreamOp,    &Unpickler::ScalarOp, &Unpickler::StringOp,
                                      &Unpickler::ContainerOp, &Unpickler::ObjectOp, &Unpickler::MemoOp};
  while (true) {
    op_pos_ = pos_;
    if (pos_ >= n_) return Bad("stream ends without STOP");
    const unsigned char op = p_[pos_++];
    if (op == '.') {  // STOP
      ValueId root = kNoValue;
      YC_RETURN_IF_ERROR(Pop(&root));
      tree_.root_ = root;
      return std::move(tree_);
    }
    std::optional<Status> done;
    for (const Group group : kGroups) {
      if ((done = (this->*group)(op))) break;
    }
    YC_RETURN_IF_ERROR(done ? *done : Unsupported(op));
  }
}

Result<PickleTree> Unpickle(std::string_view data, const std::string& what) {
  Unpickler u(data, what);
  return u.Run();
}

}  // namespace yc::trainer
