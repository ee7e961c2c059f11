#!/usr/bin/env python3
"""Checks that no #include runs back up the stages of the project.

Each folder below has a rank; a file may include only headers of its own folder or of folders with a
lower rank. The order is the data flow: libcache -> loader -> trainer (runtime, distributed, config ->
model -> loss, io -> eval -> engine) -> tools and python (side by side). Exit 0 when clean, 1 listing every upward include.
"""
import pathlib
import re
import sys

RANKS = {
    "libcache": 0,
    "loader": 1,
    "trainer/runtime": 2,
    "trainer/distributed": 2,
    "trainer/config": 2,
    "trainer/plots": 2,
    "trainer/model": 3,
    "trainer/loss": 4,
    "trainer/io": 4,
    "trainer/eval": 5,
    "trainer/engine": 6,
    "tools": 7,
    "python": 7,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """The ranked folder a repository path belongs to, or None (tests, bench, fuzz, ...)."""
    for folder in sorted(RANKS, key=len, reverse=True):
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = []
    for top in ("libcache", "loader", "trainer", "tools", "python"):
        for source in sorted((root / top).rglob("*")):
            if source.suffix not in (".h", ".cc"):
                continue
            rel = source.relative_to(root).as_posix()
            own = folder_of(rel)
            if own is None:
                problems.append(f"{rel}: in no ranked folder (add its folder to {__file__})")
                continue
            for header in INCLUDE.findall(source.read_text(errors="replace")):
                other = folder_of(header)
                if other is not None and other != own and RANKS[other] >= RANKS[own]:
                    problems.append(f"{rel}: includes {header} ({other} is not below {own})")
    for p in problems:
        print(p)
    print(f"{len(problems)} upward include(s)" if problems else "layers clean")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
