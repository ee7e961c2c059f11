#include "trainer/io/checkpoint_checksum.h"

#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace yc::trainer {

namespace {

void Update(XXH3_state_t* state, const void* data, size_t n) { XXH3_64bits_update(state, data, n); }

// Length-prefixed, so that no two sequences of items hash the same bytes.
void UpdateText(XXH3_state_t* state, const std::string& s) {
  const uint64_t n = s.size();
  Update(state, &n, sizeof n);
  Update(state, s.data(), s.size());
}

void UpdateInt(XXH3_state_t* state, int64_t v) { Update(state, &v, sizeof v); }

}  // namespace

void ChecksumInput::AddText(std::string label, std::string text) {
  Item item;
  item.label = std::move(label);
  item.kind = 's';
  item.text = std::move(text);
  items_.push_back(std::move(item));
}

void ChecksumInput::AddInt(std::string label, int64_t value) {
  Item item;
  item.label = std::move(label);
  item.kind = 'i';
  item.integer = value;
  items_.push_back(std::move(item));
}

void ChecksumInput::AddReal(std::string label, double value) {
  Item item;
  item.label = std::move(label);
  item.kind = 'r';
  std::memcpy(&item.integer, &value, sizeof value);
  items_.push_back(std::move(item));
}

void ChecksumInput::AddTensor(std::string label, at::Tensor tensor) {
  Item item;
  item.label = std::move(label);
  item.kind = 't';
  item.tensor = std::move(tensor);
  items_.push_back(std::move(item));
}

void ChecksumInput::Append(ChecksumInput&& other) {
  for (Item& item : other.items_) items_.push_back(std::move(item));
  other.items_.clear();
}

std::string ChecksumInput::Digest() const {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  for (const Item& item : items_) {
    UpdateText(state.get(), item.label);
    Update(state.get(), &item.kind, 1);
    switch (item.kind) {
      case 's': UpdateText(state.get(), item.text); break;
      case 'i': case 'r': UpdateInt(state.get(), item.integer); break;
      case 't': {
        const at::Tensor& t = item.tensor;
        if (!t.defined()) {
          UpdateInt(state.get(), -1);
          break;
        }
        UpdateText(state.get(), c10::toString(t.scalar_type()));
        UpdateInt(state.get(), t.dim());
        for (int64_t d : t.sizes()) UpdateInt(state.get(), d);
        const at::Tensor c = t.cpu().contiguous();
        Update(state.get(), c.data_ptr(), c.numel() * c.element_size());
        break;
      }
    }
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits_digest(state.get())));
  return std::string("xxh3-64:") + hex;
}

}  // namespace yc::trainer
