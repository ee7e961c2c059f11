# `cmake --install <build> --component python`: copies the built package (<build>/python/yolocache) into
# the site directory of the Python that runs at install time, so an active venv gets it:
#   the interpreter: $YOLOCACHE_PYTHON, else $VIRTUAL_ENV/bin/python, else `python3` on PATH, else the
#     one the module was built for; the first whose extension suffix is the module's (same version and
#     ABI: a module for 3.11 would not import in 3.12); an explicit $YOLOCACHE_PYTHON must match.
#   the folder: YOLOCACHE_PYTHON_SITE when configured; else a venv's site-packages (sysconfig purelib);
#     else that Python's user site-packages (Debian's system Python refuses writes beside its own).
# Expects: YC_PACKAGE_DIR (the built package), YC_BUILD_PYTHON, YC_EXT_SUFFIX, YC_SITE (may be empty).
set(_site "${YC_SITE}")
set(_python "")
set(_candidates)
if(DEFINED ENV{YOLOCACHE_PYTHON} AND NOT "$ENV{YOLOCACHE_PYTHON}" STREQUAL "")
  set(_candidates "$ENV{YOLOCACHE_PYTHON}")
else()
  if(DEFINED ENV{VIRTUAL_ENV} AND EXISTS "$ENV{VIRTUAL_ENV}/bin/python")
    list(APPEND _candidates "$ENV{VIRTUAL_ENV}/bin/python")
  endif()
  find_program(_path_python3 python3 NO_CACHE)
  list(APPEND _candidates ${_path_python3} "${YC_BUILD_PYTHON}")
endif()
foreach(candidate ${_candidates})
  execute_process(COMMAND "${candidate}" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"
                  OUTPUT_VARIABLE suffix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND suffix STREQUAL YC_EXT_SUFFIX)
    set(_python "${candidate}")
    break()
  endif()
endforeach()
if(NOT _python)
  message(FATAL_ERROR "yolocache: no Python among ${_candidates} takes a module built as *${YC_EXT_SUFFIX} "
                      "(rebuild with -DYOLOCACHE_PYTHON=<that python>)")
endif()
if(NOT _site)
  execute_process(
    COMMAND "${_python}" -c "import site, sys, sysconfig
print(sysconfig.get_paths()['purelib'] if sys.prefix != sys.base_prefix else site.getusersitepackages())"
    OUTPUT_VARIABLE _site OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT _site)
    message(FATAL_ERROR "yolocache: cannot ask ${_python} for its site-packages")
  endif()
endif()
message(STATUS "yolocache: installing the Python package for ${_python} into ${_site}")
file(INSTALL "${YC_PACKAGE_DIR}" DESTINATION "${_site}" FILES_MATCHING PATTERN "*.py" PATTERN "*.so")
