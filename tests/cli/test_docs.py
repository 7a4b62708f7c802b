#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The documentation cannot drift from the code:

- every DLTRACE_* setting in the recorder's one settings table is in the
  environment reference with its default, and every DLTRACE_* variable the
  program and the recorder read (getenv in cli/, record/, replay/, formats/,
  ns3-module/, flow/, views/, runs/, models/) is in it at all;
- every subcommand that `dltrace --help` lists has a reference page that
  generates its options from `dltrace COMMAND --help` (so no option can be
  missing from the reference) and shows a runnable example;
  (tests/docs/check_reference.py checks the built site has every option);
- every script in scripts/ is in scripts/README.md;
- the README is a front page (at most 150 lines) and no page speaks of
  "this machine";
- the README's test command is what .ci/run runs.
"""
import glob
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DLTRACE = os.environ.get("DLTRACE", "dltrace")
DOCS = os.path.join(ROOT, "docs")
COMMANDS = os.path.join(DOCS, "reference", "commands")


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def subcommands():
    out = subprocess.run([DLTRACE, "--help"], capture_output=True, text=True).stdout
    return re.findall(r"^  ([a-z][\w-]*)\s", re.split(r"(?i)subcommands:", out)[-1], re.M)


class DocsTest(unittest.TestCase):
    def test_every_setting_is_documented_with_its_default(self):
        table = re.findall(r'\{"(DLTRACE_[A-Z_]+)",\s*"([^"]*)"', read("record", "src", "settings.cc"))
        self.assertGreater(len(table), 5)
        text = read("docs", "reference", "environment.md")
        for name, default in table:
            row = re.search(r"^\| `%s` \|\s*([^|]*?)\s*\|" % name, text, re.M)
            self.assertIsNotNone(row, name + " missing from the settings table of docs/reference/environment.md")
            if default and name != "DLTRACE_OUTPUT":
                self.assertEqual(row.group(1).strip(), default, name)

    def test_every_variable_read_is_documented(self):
        text = read("docs", "reference", "environment.md")
        names = set()
        for part in ("cli", "record", "replay", "formats", "ns3-module", "flow", "views", "runs", "models", "executor"):
            for path in glob.glob(os.path.join(ROOT, part, "**", "*.*"), recursive=True):
                if path.endswith((".cc", ".h", ".c")):
                    with open(path, errors="replace") as f:
                        names |= set(re.findall(r'"(DLTRACE_[A-Z0-9_]+)"', f.read()))
        self.assertIn("DLTRACE_RECORD_LIB", names)
        for name in sorted(names):
            self.assertIn("`%s`" % name, text, name + " is read by the code but missing from docs/reference/environment.md")

    def test_every_subcommand_has_a_generated_reference_page(self):
        commands = subcommands()
        self.assertIn("info", commands)
        for c in commands:
            page = os.path.join(COMMANDS, c + ".md")
            self.assertTrue(os.path.exists(page), "dltrace %s: no page docs/reference/commands/%s.md" % (c, c))
            with open(page) as f:
                text = f.read()
            self.assertRegex(text, r"```\{dltrace-help\} %s\n```" % c, c + ": the page does not generate its options")
            self.assertRegex(text, r"```sh\n(?:.*\n)*?.*dltrace %s " % c, c + ": no example")
            self.assertIn("\n%s\n" % c, read("docs", "reference", "commands", "index.md"), c + ": not in the commands index")

    def test_every_script_is_listed(self):
        listed = read("scripts", "README.md")
        for path in sorted(glob.glob(os.path.join(ROOT, "scripts", "*.sh"))):
            name = os.path.basename(path)
            self.assertIn("`%s" % name, listed, name + " is missing from scripts/README.md")

    def test_readme_is_a_front_page(self):
        text = read("README.md")
        self.assertLessEqual(text.count("\n"), 150, "README.md is a front page of at most 150 lines; move text to docs/")
        for path in [os.path.join(ROOT, "README.md")] + glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True):
            with open(path) as f:
                self.assertNotIn("this machine", f.read(), path + ": say which machine (results) or none (user docs)")

    def test_readme_test_command_is_what_ci_runs(self):
        ci = read(".ci", "run")
        command = re.search(r"^exec (\S+)", ci, re.M).group(1)
        self.assertIn(command, read("README.md"), ".ci/run runs %s, which the README does not show" % command)


if __name__ == "__main__":
    unittest.main(verbosity=2)
