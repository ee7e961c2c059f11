#!/usr/bin/env python3
"""Checks that no #include runs back up the stages of the project, between folders or inside them.

Every source file belongs to one unit below: a folder (all files under it) or one face file of a folder
(given by its path without extension, so x.h and x.cc are one unit). A file may include headers of its
own unit or of units with a lower rank. The ranks follow the data flow: base -> libcache (base, format,
source, store, cache.h, remote, verify and build, report_json and exclusion_report) -> loader (options, base,
kernels, ops, order, render, io, loader.h, measure) -> trainer (runtime, distributed, config, plots -> model -> loss, io ->
eval -> engine) -> tools and python (side by side). Exit 0 when clean, 1 listing every upward include.
Usage: check_layers.py [ROOT]
"""
import pathlib
import re
import sys

# (rank, members): a member ending in "/" is a folder, else one file's path without its extension.
# Units of one rank may not include each other.
UNITS = [
    ((0, 0), ["base/"]),
    ((1, 0), ["libcache/base/"]),
    ((1, 1), ["libcache/record_source"]),
    ((1, 2), ["libcache/format/"]),
    ((1, 3), ["libcache/source/"]),
    ((1, 4), ["libcache/store/"]),
    ((1, 5), ["libcache/cache"]),
    ((1, 6), ["libcache/remote/"]),
    ((1, 7), ["libcache/verify/"]),
    ((1, 7), ["libcache/build/"]),
    ((1, 7), ["libcache/record_selection"]),
    ((1, 8), ["libcache/report_json"]),
    ((1, 8), ["libcache/exclusion_report"]),
    ((2, 0), ["loader/options", "loader/option_table", "loader/batch", "loader/stats"]),
    ((2, 1), ["loader/base/"]),
    ((2, 2), ["loader/kernels/"]),
    ((2, 3), ["loader/ops/"]),
    ((2, 4), ["loader/order/"]),
    ((2, 5), ["loader/render/"]),
    ((2, 6), ["loader/io/"]),
    ((2, 7), ["loader/loader"]),
    ((2, 8), ["loader/measure/"]),
    ((3, 0), ["trainer/runtime/"]),
    ((3, 0), ["trainer/distributed/"]),
    ((3, 0), ["trainer/config/"]),
    ((3, 0), ["trainer/plots/"]),
    ((3, 1), ["trainer/model/"]),
    ((3, 2), ["trainer/loss/"]),
    ((3, 2), ["trainer/io/"]),
    ((3, 3), ["trainer/eval/"]),
    ((3, 4), ["trainer/engine/"]),
    ((4, 0), ["tools/common/"]),
    ((4, 1), ["tools/"]),
    ((4, 1), ["python/"]),
]
TOPS = ("base", "libcache", "loader", "trainer", "tools", "python")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def unit_of(path):
    """(rank, unit index) of a repository path, or None for paths outside the ranked tree (tests, bench...)."""
    stem = path.rsplit(".", 1)[0]
    best = None
    for index, (rank, members) in enumerate(UNITS):
        for m in members:
            if (m.endswith("/") and path.startswith(m)) or stem == m:
                length = len(m) + (1000 if not m.endswith("/") else 0)  # a face file beats its folder
                if best is None or length > best[0]:
                    best = (length, rank, index)
    return None if best is None else (best[1], best[2])


def problems_in(root):
    problems = []
    for top in TOPS:
        for source in sorted((root / top).rglob("*")):
            if source.suffix not in (".h", ".cc"):
                continue
            rel = source.relative_to(root).as_posix()
            own = unit_of(rel)
            if own is None:
                problems.append(f"{rel}: in no ranked unit (add it to UNITS in tests/layout/check_layers.py)")
                continue
            for header in INCLUDE.findall(source.read_text(errors="replace")):
                other = unit_of(header)
                if other is not None and other[1] != own[1] and other[0] >= own[0]:
                    problems.append(f"{rel}: includes {header} (not below {rel.rsplit('/', 1)[0]}/)")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = problems_in(root)
    for p in problems:
        print(p)
    print(f"{len(problems)} upward include(s)" if problems else "layers clean")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
