# SPDX-License-Identifier: GPL-2.0-only
"""The command reference, generated from the program itself.

``{dltrace-help} COMMAND`` (MyST) or ``.. dltrace-help:: COMMAND`` puts the
output of ``dltrace COMMAND --help`` into the page at build time, so an
option someone adds appears in the reference without anyone writing it down.
Without an argument it shows ``dltrace --help``.

When the build ends, every subcommand that ``dltrace --help`` lists must have
been shown by one such directive somewhere; one that was not is a warning,
which ``scripts/docs.sh`` (``-W``) turns into a failed build.

The program: $DLTRACE_BIN, else build/cli/dltrace of this checkout, else
``dltrace`` on PATH.
"""
import os
import re
import shutil
import subprocess

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def dltrace_program():
    env = os.environ.get("DLTRACE_BIN")
    if env:
        return env
    local = os.path.join(ROOT, "build", "cli", "dltrace")
    if os.access(local, os.X_OK):
        return local
    return shutil.which("dltrace")


def run_help(command):
    program = dltrace_program()
    if not program:
        return None, "no dltrace program: set DLTRACE_BIN or build build/cli/dltrace"
    args = [program] + ([command] if command else []) + ["--help"]
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except OSError as e:
        return None, "%s: %s" % (" ".join(args), e)
    if p.returncode != 0:
        return None, "%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr.strip())
    return p.stdout, None


def subcommands():
    out, error = run_help(None)
    if error:
        return None, error
    return re.findall(r"^  ([a-z][\w-]*)\s", re.split(r"(?i)subcommands:", out)[-1], re.M), None


class DltraceHelp(SphinxDirective):
    optional_arguments = 1
    has_content = False

    def run(self):
        command = self.arguments[0] if self.arguments else None
        text, error = run_help(command)
        if error:
            logger.warning("dltrace-help: %s", error, location=self.get_location())
            return []
        shown = getattr(self.env, "dltrace_help_shown", {})
        shown[command or ""] = self.env.docname
        self.env.dltrace_help_shown = shown
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def check_every_command(app, env):
    commands, error = subcommands()
    if error:
        logger.warning("dltrace-help: %s", error)
        return
    shown = getattr(env, "dltrace_help_shown", {})
    for c in commands:
        if c not in shown:
            logger.warning("dltrace-help: the command reference has no page for `dltrace %s` "
                           "(add docs/reference/commands/%s.md with ```{dltrace-help} %s```)", c, c, c)
    for c in shown:
        if c and c not in commands:
            logger.warning("dltrace-help: docs show `dltrace %s`, which `dltrace --help` does not list", c)


def merge(app, env, docnames, other):
    env.dltrace_help_shown = {**getattr(env, "dltrace_help_shown", {}), **getattr(other, "dltrace_help_shown", {})}


def purge(app, env, docname):
    shown = getattr(env, "dltrace_help_shown", {})
    env.dltrace_help_shown = {c: d for c, d in shown.items() if d != docname}


def setup(app):
    app.add_directive("dltrace-help", DltraceHelp)
    app.connect("env-check-consistency", check_every_command)
    app.connect("env-merge-info", merge)
    app.connect("env-purge-doc", purge)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
