// Status -> Python exception. The C++ message (file and reason) is the exception's text, so a broken
// cache or a bad option is an ordinary exception in the user's code, never a crash of the interpreter.
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"

namespace yc::py {
namespace {
PyObject* g_error = nullptr;  // yolocache.Error; lives as long as the module (kept referenced there)
}  // namespace

void BindErrors(pb::module_& m) {
  static pb::exception<std::runtime_error> error(m, "Error", PyExc_RuntimeError);
  g_error = error.ptr();
}

void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  const std::string text = status.ToString();
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
      throw pb::value_error(text);
    case Status::Code::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, text.c_str());
      throw pb::error_already_set();
    case Status::Code::kCancelled:
      PyErr_SetString(PyExc_KeyboardInterrupt, text.c_str());
      throw pb::error_already_set();
    case Status::Code::kResourceExhausted:
      PyErr_SetString(PyExc_MemoryError, text.c_str());
      throw pb::error_already_set();
    default:
      PyErr_SetString(g_error, text.c_str());
      throw pb::error_already_set();
  }
}

}  // namespace yc::py
