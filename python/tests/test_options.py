"""The loader's option vocabulary on the Python side: LOADER_OPTIONS, HYP_DEFAULTS and Loader's signature
are the C++ table (loader/option_table.h), and its defaults are Ultralytics' default.yaml values."""
import inspect
from pathlib import Path

import pytest
import yaml

from conftest import REPO

import yolocache
from yolocache import _yolocache

DEFAULT_YAML = REPO.parent / "shared" / "ultralytics" / "ultralytics" / "cfg" / "default.yaml"


def test_the_package_takes_its_options_from_the_cpp_table():
    table = _yolocache.loader_options()
    assert list(yolocache.LOADER_OPTIONS) == [o["name"] for o in table]
    assert yolocache.HYP_DEFAULTS == {o["name"]: o["default"] for o in table if o["hyp"]}
    signature = inspect.signature(yolocache.Loader)
    for option in table:
        if not option["hyp"]:
            assert signature.parameters[option["name"]].default == option["default"], option["name"]
    assert {"cache", "split", "hyp", "pin_memory"} <= set(signature.parameters)
    assert yolocache.LOADER_OPTIONS["window_io"]["choices"] == ["auto", "direct", "page-cache"]
    assert yolocache.LOADER_OPTIONS["window_io"]["default"] == "auto"


def test_defaults_are_ultralytics_default_yaml():
    if not DEFAULT_YAML.exists():
        pytest.skip(f"{DEFAULT_YAML} is absent (../shared/ultralytics)")
    reference = yaml.safe_load(DEFAULT_YAML.read_text())
    for name, default in yolocache.HYP_DEFAULTS.items():
        assert default == reference[name] and type(default) is type(reference[name]), name
    for name in ("batch", "imgsz", "epochs", "seed"):
        assert yolocache.LOADER_OPTIONS[name]["default"] == reference[name], name


def test_an_unknown_keyword_and_a_wrong_type_are_refused_by_name(cache):
    with pytest.raises(TypeError, match="unexpected keyword argument 'batch_size'"):
        yolocache.Loader(cache, batch_size=8)
    with pytest.raises(ValueError, match="'batch' has the wrong type: <class 'float'>"):
        yolocache.Loader(cache, batch=8.0)
    with pytest.raises(ValueError, match="'shuffle' has the wrong type: <class 'int'>"):
        yolocache.Loader(cache, shuffle=1)
    with pytest.raises(ValueError, match="window_mb.*must be >= 1.0"):
        yolocache.Loader(cache, window_mb=0)
