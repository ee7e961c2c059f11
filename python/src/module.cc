// The compiled half of `import yolocache` (python/yolocache/__init__.py is the other half).
#include "python/src/bindings.h"

PYBIND11_MODULE(_yolocache, m) {
  m.doc() = "yolocache: cache builder, verifier, C++ batch loader and trainer (use the yolocache package, not this module)";
  yc::py::BindErrors(m);
  yc::py::BindReports(m);
  yc::py::BindCache(m);
  yc::py::BindOptions(m);
  yc::py::BindLoader(m);
  yc::py::BindPrepare(m);
  yc::py::BindCommands(m);
}
