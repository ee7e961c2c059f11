#!/usr/bin/env python3
"""Fills the option tables of docs/ from the definitions themselves, or checks that they agree.

A table sits between `<!-- options: ARGS -->` and `<!-- /options -->` in a Markdown file; its text is what
`yolocache-train options --markdown ARGS` prints (train's command line, or the loader's option table:
loader/option_table.h). Run after changing an option:
    scripts/option_tables.py build            # rewrites the tables in docs/*.md
    scripts/option_tables.py --check build    # exit 1 naming each table that differs (a ctest)
"""
import argparse
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = re.compile(r"(<!-- options:([^>]*?)-->\n)(.*?)(<!-- /options -->)", re.S)


def generated(binary, args):
    return subprocess.run([str(binary), "options", "--markdown", *args.split()], check=True, capture_output=True,
                          text=True).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path, help="the build directory (holds tools/yolocache-train)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a table differs")
    a = parser.parse_args()
    binary = a.build / "tools" / "yolocache-train"
    stale = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()

        def fill(m):
            table = generated(binary, m.group(2))
            if table != m.group(3):
                stale.append(f"{doc.relative_to(ROOT)}: the table of `options --markdown{m.group(2).rstrip()}`")
            return m.group(1) + table + m.group(4)

        updated = TABLE.sub(fill, text)
        if not a.check and updated != text:
            doc.write_text(updated)
    for line in stale:
        print(("differs from its definition: " if a.check else "updated: ") + line)
    if a.check and stale:
        print(f"run: scripts/option_tables.py {a.build}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
