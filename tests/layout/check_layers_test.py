#!/usr/bin/env python3
"""check_layers.py catches what it is for: an upward include planted between stages, one planted inside a
stage's folders, and a file in no ranked unit; and it passes the same tree without them."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).with_name("check_layers.py")


def run_checker(root):
    done = subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class PlantedIncludes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        write(self.root, "base/status.h", "#pragma once\n")
        write(self.root, "libcache/format/record_format.h", '#include "base/status.h"\n')
        write(self.root, "loader/base/rng.h", "#pragma once\n")
        write(self.root, "loader/ops/mosaic.h", '#include "loader/base/rng.h"\n#include "libcache/format/record_format.h"\n')
        write(self.root, "loader/loader.h", '#include "loader/ops/mosaic.h"\n')

    def tearDown(self):
        self.tmp.cleanup()

    def test_clean_tree_passes(self):
        code, out = run_checker(self.root)
        self.assertEqual(code, 0, out)
        self.assertIn("layers clean", out)

    def test_include_up_between_stages_is_caught(self):
        write(self.root, "libcache/format/shard_format.h", '#include "loader/loader.h"\n')
        code, out = run_checker(self.root)
        self.assertEqual(code, 1, out)
        self.assertIn("libcache/format/shard_format.h: includes loader/loader.h", out)

    def test_include_up_inside_a_stage_is_caught(self):
        write(self.root, "loader/base/geometry.h", '#include "loader/ops/mosaic.h"\n')
        code, out = run_checker(self.root)
        self.assertEqual(code, 1, out)
        self.assertIn("loader/base/geometry.h: includes loader/ops/mosaic.h", out)

    def test_a_stage_including_its_face_is_caught(self):
        write(self.root, "loader/base/clock.h", '#include "loader/loader.h"\n')
        code, out = run_checker(self.root)
        self.assertEqual(code, 1, out)
        self.assertIn("loader/base/clock.h: includes loader/loader.h", out)

    def test_unranked_file_is_caught(self):
        write(self.root, "loader/misc/helper.h", "#pragma once\n")
        code, out = run_checker(self.root)
        self.assertEqual(code, 1, out)
        self.assertIn("loader/misc/helper.h: in no ranked unit", out)


if __name__ == "__main__":
    unittest.main()
