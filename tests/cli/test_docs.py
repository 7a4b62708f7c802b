#!/usr/bin/env python3
"""The README cannot drift from the code: every DLTRACE_* setting in the one
settings table is documented with its default, and every subcommand that
`dltrace --help` lists has a README section with a runnable example."""
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DLTRACE = os.environ.get("DLTRACE", "dltrace")


def readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


class DocsTest(unittest.TestCase):
    def test_every_setting_is_documented_with_its_default(self):
        with open(os.path.join(ROOT, "record", "src", "settings.cc")) as f:
            table = re.findall(r'\{"(DLTRACE_[A-Z_]+)",\s*"([^"]*)"', f.read())
        self.assertGreater(len(table), 5)
        text = readme()
        for name, default in table:
            row = re.search(r"^\| `%s` \|\s*([^|]*?)\s*\|" % name, text, re.M)
            self.assertIsNotNone(row, name + " missing from the README settings table")
            if default and name != "DLTRACE_OUTPUT":
                self.assertEqual(row.group(1).strip(), default, name)

    def test_every_subcommand_has_a_readme_example(self):
        out = subprocess.run([DLTRACE, "--help"], capture_output=True, text=True).stdout
        commands = re.findall(r"^  (\w+)\s", out, re.M)
        self.assertIn("info", commands)
        text = readme()
        for c in commands:
            self.assertIn("### `dltrace %s" % c, text, c + ": no README section")
            self.assertRegex(text, r"```sh\n(?:.*\n)*?.*dltrace %s " % c, c + ": no example")


if __name__ == "__main__":
    unittest.main(verbosity=2)
