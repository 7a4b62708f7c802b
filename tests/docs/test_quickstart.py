#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""ctest readme_quickstart: the README's quick start runs as written and
prints what the README shows.

The section "## Quick start" of README.md holds ```sh blocks (the commands)
and ```text blocks (what they printed). This test runs every command of the
sh blocks in order, with bash, in a fresh directory, with $DLTRACE's folder
first on PATH (so `dltrace` is the program under test), and fails on the
first command that exits non-zero. Then every line of the text blocks must
appear in the output, except the parts that depend on the machine: wall
times, rates per wall second and memory (lines marked so by the words
"wall", "peak memory" or "per wall s" are compared up to those words), and
numbers in such fields. Files the commands name with --png must exist as
PNG images.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DLTRACE = os.path.abspath(os.environ.get("DLTRACE", os.path.join(ROOT, "build", "cli", "dltrace")))


def quick_start():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"^## Quick start\b.*?(?=^## )", text, re.S | re.M)
    assert m, "README.md has no '## Quick start' section"
    section = m.group(0)
    blocks = re.findall(r"^```(sh|text)\n(.*?)^```", section, re.S | re.M)
    commands = [b for kind, b in blocks if kind == "sh"]
    shown = [b for kind, b in blocks if kind == "text"]
    return commands, shown


def comparable(line):
    """The part of an output line that does not depend on the machine."""
    line = line.rstrip()
    for cut in ("wall", "peak memory", "per wall s"):
        i = line.find(cut)
        if i >= 0:
            line = line[:i]
            # a number just before the cut is a wall time or a rate
            line = re.sub(r"[\d.,e+-]+\s*\w*\s*$", "", line)
    return line.rstrip()


class QuickStartTest(unittest.TestCase):
    def test_quick_start_runs_as_written(self):
        commands, shown = quick_start()
        self.assertTrue(commands, "no ```sh block in the quick start")
        self.assertTrue(os.access(DLTRACE, os.X_OK), DLTRACE)
        work = tempfile.mkdtemp(prefix="dltrace-quickstart-")
        try:
            env = dict(os.environ, PATH=os.path.dirname(DLTRACE) + os.pathsep + os.environ["PATH"])
            output = ""
            for block in commands:
                for cmd in [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]:
                    p = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], cwd=work, env=env,
                                       capture_output=True, text=True, timeout=500)
                    output += p.stdout + p.stderr
                    self.assertEqual(p.returncode, 0, "README quick start: `%s` exited %d:\n%s%s"
                                     % (cmd, p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
                    for png_dir in re.findall(r"--png\s+(\S+)", cmd):
                        pngs = [f for f in os.listdir(os.path.join(work, png_dir)) if f.endswith(".png")]
                        self.assertTrue(pngs, "no PNG in " + png_dir)
                        for f in pngs:
                            with open(os.path.join(work, png_dir, f), "rb") as fh:
                                self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n", f)
            got = [comparable(l) for l in output.splitlines()]
            for block in shown:
                for line in block.splitlines():
                    want = comparable(line)
                    if not want.strip() or want.strip() == "...":
                        continue
                    self.assertIn(want, got, "the README shows a line the quick start no longer prints:\n%s" % line)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
