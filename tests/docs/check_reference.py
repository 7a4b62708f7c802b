#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""After scripts/docs.sh: the built command reference names every command and
every option the program has.

  check_reference.py HTML_DIR DLTRACE

For each subcommand `DLTRACE --help` lists, HTML_DIR/reference/commands/
COMMAND.html must exist and contain every `--option` (and `-x` short form)
that `DLTRACE COMMAND --help` prints. Exits 1 naming what is missing."""
import html
import os
import re
import subprocess
import sys


def main():
    site, dltrace = sys.argv[1], sys.argv[2]
    top = subprocess.run([dltrace, "--help"], capture_output=True, text=True, check=True).stdout
    commands = re.findall(r"^  ([a-z][\w-]*)\s", re.split(r"(?i)subcommands:", top)[-1], re.M)
    if not commands:
        sys.exit("check_reference: no subcommands in `dltrace --help`")
    missing, options_seen = [], 0
    for c in commands:
        page = os.path.join(site, "reference", "commands", c + ".html")
        if not os.path.exists(page):
            missing.append("dltrace %s: no page reference/commands/%s.html" % (c, c))
            continue
        with open(page, encoding="utf-8") as f:
            text = html.unescape(re.sub(r"<[^>]+>", "", f.read()))
        out = subprocess.run([dltrace, c, "--help"], capture_output=True, text=True, check=True).stdout
        options = set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", out))
        options |= set(re.findall(r"^\s+(-\w),", out, re.M))
        for o in sorted(options):
            options_seen += 1
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text):
                missing.append("dltrace %s %s: not in reference/commands/%s.html" % (c, o, c))
    for m in missing:
        print(m)
    if missing:
        sys.exit(1)
    print("check_reference: %d commands, %d options, all in the built reference" % (len(commands), options_seen))


if __name__ == "__main__":
    main()
