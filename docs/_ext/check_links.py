#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks links that stay inside the project (scripts/docs.sh runs it).

  check_links.py HTML_DIR [MARKDOWN_FILE ...]

In the built site every relative href must name a file that exists and, when
it has a #fragment, an id in that file. In each Markdown file every relative
link must name a file or folder of the checkout (a #fragment of a Markdown
target must match one of its headings, GitHub style). External links
(http, https, mailto) are not fetched: the build is offline. Prints each
broken link and exits 1 if there is one."""
import html.parser
import os
import re
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "name" in a:
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) and not (tag == "link" and key == "href" and a.get("rel") == "canonical"):
                self.links.append(a[key])


def external(link):
    return re.match(r"^[a-z][a-z0-9+.-]*:", link) is not None


def check_site(root):
    pages, broken = {}, []
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".html"):
                p = Page()
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    p.feed(fh.read())
                pages[os.path.normpath(path)] = p
    for path, p in pages.items():
        for link in p.links:
            if external(link) or link.startswith("//"):
                continue
            target, _, frag = link.partition("#")
            target = urllib.parse.unquote(target)
            full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(full):
                broken.append("%s: %s (no such file)" % (os.path.relpath(path, root), link))
            elif frag and full.endswith(".html") and frag not in pages.get(full, Page()).ids:
                broken.append("%s: %s (no such anchor)" % (os.path.relpath(path, root), link))
    return len(pages), broken


def github_anchor(heading):
    h = re.sub(r"[`*_]", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def check_markdown(path):
    broken = []
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        link = m.group(1)
        if external(link):
            continue
        target, _, frag = link.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        if not os.path.exists(full):
            broken.append("%s: %s (no such file)" % (path, link))
        elif frag and full.endswith(".md"):
            heads = re.findall(r"^#+ (.*)$", open(full, encoding="utf-8").read(), re.M)
            if frag not in {github_anchor(h) for h in heads}:
                broken.append("%s: %s (no such heading)" % (path, link))
    return broken


def main():
    site = sys.argv[1]
    n, broken = check_site(site)
    for md in sys.argv[2:]:
        if os.path.exists(md):
            broken += check_markdown(md)
    for b in broken:
        print("broken link: " + b)
    if broken:
        sys.exit(1)
    print("links: %d pages and %d Markdown files, every internal link resolves" % (n, len(sys.argv) - 2))


if __name__ == "__main__":
    main()
