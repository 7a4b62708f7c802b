# SPDX-License-Identifier: GPL-2.0-only
# Sphinx configuration of the dltrace documentation (scripts/docs.sh builds it).
# Markdown pages through MyST; the ns-3 module's page is reStructuredText
# (ns-3's own format), included from ns3-module/doc/.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

project = "dltrace"
author = "the dltrace authors"
copyright = "the dltrace authors; GPL-2.0-only"
extensions = ["myst_parser", "dltrace_help"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext", "README.md"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
html_theme = "alabaster"
html_theme_options = {"description": "record, replay and simulate distributed-training communication"}
html_static_path = []
# Offline: nothing is fetched while building.
intersphinx_mapping = {}
