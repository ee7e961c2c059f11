"""Python keywords -> the `key=value` tokens Ultralytics' CLI reads, for yolocache-train's parser.

yolocache.YOLO hands every keyword to the same command line as `yolocache-train train key=value ...`,
so Python and the CLI accept, reject and interpret an argument alike. Values are written as a user types
them at Ultralytics' CLI: True/False, numbers as Python prints them, lists as [a,b] (no spaces: one
token), `device` lists as 0,1 (Ultralytics' device string), paths as strings; None means the default
and passes nothing.
"""
from pathlib import PurePath

__all__ = ["tokens"]


def _value_text(key, value):
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        items = [_value_text(key, v) for v in value]
        return ",".join(items) if key == "device" else "[" + ",".join(items) + "]"
    if isinstance(value, PurePath):
        return str(value)
    return str(value)


def tokens(kwargs):
    """['epochs=3', 'amp=False', 'imgsz=[640,480]', ...] in the order given; None values left out."""
    return [f"{key}={_value_text(key, value)}" for key, value in kwargs.items() if value is not None]
