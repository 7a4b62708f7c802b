#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`dltrace report`: one self-contained HTML file, opened from a file:// URL
by a real headless Chromium. Every chart rendered with uPlot (the page's
status element says no script error; each chart has its series, by legend
label, and values drawn), hovering a drawn value shows it and dragging zooms
(report_probe.js, injected into a copy, drives each chart with mouse events),
a screenshot kept as a test artifact, --png writes each chart as an image,
replayed results and flow completion times join the recorded run. Skips
(exit 77) only when Chromium is absent."""
import html as htmllib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from views_fixtures import record_training, run, synth  # noqa: E402

CHROMIUM = shutil.which(os.environ.get("DLTRACE_CHROMIUM", "chromium")) or shutil.which("chromium-browser")
ARTIFACTS = os.environ.get("DLTRACE_TEST_ARTIFACTS", "")
CHARTS = ["matrix", "timeline", "kind-bytes", "kind-time", "sizes", "res-cpu", "res-mem", "res-net",
          "res-disk", "iterations"]


PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_probe.js")


def browse(url, *extra):
    """Chromium on URL with a fresh profile, nothing fetched in the background.
    --virtual-time-budget runs the page's timers in virtual time, so no bound
    here depends on how loaded the machine is."""
    profile = tempfile.mkdtemp(prefix="dltrace-chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               "--no-first-run", "--user-data-dir=" + profile, "--virtual-time-budget=5000",
                               *extra, url], capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def dom(path):
    p = browse("file://" + os.path.abspath(path), "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def status(html):
    m = re.search(r'<div id="status" data-charts="(\d+)" data-errors="(\d+)">([^<]*)</div>', html)
    assert m, "no status element in the rendered page"
    return int(m.group(1)), int(m.group(2)), m.group(3)


def charts(html):
    """Per chart id in the rendered page: its section's series and points
    counts, its legend's labels (uPlot's; the first names the x axis, except
    on the timeline, whose legend names only the operation kinds) and its
    readout line."""
    out = {}
    for chunk in html.split('<section class="chart"')[1:]:
        chunk = chunk.split("</section>")[0]
        m = re.search(r'data-chart="([a-z-]+)" data-series="(\d+)" data-points="(\d+)"', chunk)
        assert m, "a chart section without its data attributes: " + chunk[:300]
        labels = [htmllib.unescape(x) for x in re.findall(r'<div class="u-label">(.*?)</div>', chunk)]
        readout = re.search(r'<p class="readout">(.*?)</p>', chunk)
        out[m.group(1)] = {"series": int(m.group(2)), "points": int(m.group(3)), "legend": labels,
                           "uplot": '<div class="uplot' in chunk, "empty": '<p class="empty">' in chunk,
                           "readout": htmllib.unescape(readout.group(1)) if readout else None}
    return out


def data_of(path):
    """The JSON the report embeds."""
    with open(path) as f:
        text = f.read()
    m = re.search(r'<script id="dltrace-data" type="application/json">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def probe(path, out):
    """Opens a copy of the report at PATH, with report_probe.js run after the
    page's script, and returns what the probe saw per chart and the status."""
    with open(path) as f:
        text = f.read()
    with open(PROBE) as f:
        script = f.read()
    at = text.rindex("</body>")
    with open(out, "w") as f:
        f.write(text[:at] + "<script>\n" + script + "\n</script>\n" + text[at:])
    html = dom(out)
    at = html.rfind('<pre id="probe">')
    assert at >= 0, "the probe wrote no result"
    end = html.index("</pre>", at)
    return json.loads(htmllib.unescape(html[at + len('<pre id="probe">'):end])), status(html)


def fmt_bytes(v):
    """report.js's fmtBytes."""
    units = ["B", "KB", "MB", "GB", "TB"]
    i = 0
    while abs(v) >= 1000 and i < len(units) - 1:
        v /= 1000
        i += 1
    if abs(v) >= 100 or i == 0:
        return "%.0f %s" % (v, units[i])
    # toPrecision(3) of 1 <= v < 100
    return ("%.2f %s" if abs(v) < 10 else "%.1f %s") % (v, units[i])


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path + " is not a PNG"
    return struct.unpack(">II", head[16:24])


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-report-")
        cls.recorded, why = record_training(os.path.join(cls.tmp, "train"), steps=20)
        if not cls.recorded:
            print("note: " + why + "; the report is tested on a synthetic trace set only")
        cls.synth = synth(os.path.join(cls.tmp, "synth"), ranks=4, per_host=1, iterations=2)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def report(self, path, out, *extra):
        p = run("report", path, "-o", out, *extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("report: " + out, p.stdout)
        return p

    def test_report_of_a_recorded_run_renders_every_chart_in_chromium(self):
        path = self.recorded or self.synth
        out = self.out("report.html")
        self.report(path, out)
        with open(out) as f:
            text = f.read()
        # Self-contained: nothing fetched from anywhere.
        self.assertNotRegex(text, r'(src|href)\s*=\s*"(https?:)?//')
        self.assertNotIn("<link", text)
        self.assertNotIn("@import", text)
        # The charting library is inlined, with its license notice.
        self.assertIn("/*! https://github.com/leeoniya/uPlot (v1.6.32) */", text)
        html = dom(out)
        count, errors, message = status(html)
        self.assertEqual(errors, 0, message)
        self.assertTrue(message.startswith("ok"), message)
        self.assertEqual(count, len(CHARTS))
        drawn = charts(html)
        self.assertEqual(sorted(drawn), sorted(CHARTS))
        expect = CHARTS if self.recorded else [c for c in CHARTS if not c.startswith("res-")]
        for chart in expect:
            self.assertTrue(drawn[chart]["uplot"], chart + " has no uPlot chart")
            self.assertGreater(drawn[chart]["points"], 0, chart + " drew nothing")
        for chart in set(CHARTS) - set(expect):
            self.assertTrue(drawn[chart]["uplot"] or drawn[chart]["empty"], chart)
        # The series, by legend label, are the data's.
        d = data_of(out)
        self.assertEqual(drawn["timeline"]["legend"], d["timeline"]["kinds"])
        self.assertEqual(drawn["timeline"]["points"], sum(len(r["ops"]) for r in d["timeline"]["ranks"]))
        self.assertTrue(drawn["timeline"]["readout"].startswith("hover over an operation"))
        self.assertEqual(drawn["matrix"]["points"], sum(v > 0 for row in d["matrix"]["bytes"] for v in row))
        self.assertIn("max " + fmt_bytes(max(max(row) for row in d["matrix"]["bytes"])), html)
        for chart, label in (("kind-bytes", "bytes"), ("kind-time", "time")):
            self.assertEqual(drawn[chart]["legend"], ["kind", label])
            self.assertEqual(drawn[chart]["points"], len(d["kinds"]))
        self.assertEqual(drawn["sizes"]["legend"], ["size", "calls"])
        self.assertEqual(drawn["iterations"]["legend"], ["iteration", "recorded"])
        if self.recorded:
            ranks = [r["label"] for r in d["resources"]]
            self.assertEqual(len(ranks), 4)
            self.assertEqual(drawn["res-cpu"]["legend"], ["time"] + ranks)
            self.assertEqual(drawn["res-net"]["legend"],
                             ["time"] + [r + " " + io for r in ranks for io in ("rx", "tx")])
        if ARTIFACTS:
            os.makedirs(ARTIFACTS, exist_ok=True)
            shot = os.path.join(ARTIFACTS, "report.png")
            p = browse("file://" + os.path.abspath(out), "--window-size=1300,2600", "--screenshot=" + shot)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            w, h = png_size(shot)
            self.assertEqual((w, h), (1300, 2600))
            shutil.copy(out, os.path.join(ARTIFACTS, "report.html"))

    def test_status_element_reports_a_script_error(self):
        # The check above can fail: a page whose data is broken says so.
        out = self.out("broken.html")
        self.report(self.synth, out)
        with open(out) as f:
            text = f.read()
        text = re.sub(r'(<script id="dltrace-data" type="application/json">).*?(</script>)', r"\1{\2", text,
                      flags=re.S)
        with open(out, "w") as f:
            f.write(text)
        count, errors, message = status(dom(out))
        self.assertGreater(errors, 0)
        self.assertTrue(message.startswith("error"), message)

    def test_status_element_reports_a_missing_chart_library(self):
        # Without uPlot no chart can be drawn, and the page says so for each.
        out = self.out("no-uplot.html")
        self.report(self.synth, out)
        with open(out) as f:
            text = f.read()
        start = text.index("/*! https://github.com/leeoniya/uPlot")
        text = text[:start] + text[text.index("</script>", start):]
        with open(out, "w") as f:
            f.write(text)
        count, errors, message = status(dom(out))
        self.assertGreaterEqual(errors, len(CHARTS) - 4, message)
        self.assertIn("uPlot is not defined", message)

    def test_hover_shows_values_and_dragging_zooms(self):
        out = self.out("probed.html")
        self.report(self.recorded or self.synth, out)
        d = data_of(out)
        seen, (count, errors, message) = probe(out, self.out("probe.html"))
        self.assertEqual(errors, 0, message)
        expect = CHARTS if self.recorded else [c for c in CHARTS if not c.startswith("res-")]
        self.assertEqual(sorted(seen), sorted(expect))
        for chart in expect:
            got = seen[chart]
            why = chart + " (what the probe saw: " + json.dumps(got) + ")"
            self.assertNotIn("error", got, why)
            # Something was drawn in the plot area.
            self.assertGreater(got["ink"], 20, "inked no marks: " + why)
            # Hovering a drawn value shows it: the legend (x and at least one series), or the readout line.
            if got["idle"]["readout"] is None:
                self.assertTrue(all(v == "--" for v in got["idle"]["legend"]), why)
                values = got["hover"]["legend"]
                self.assertNotEqual(values[0], "--", why)
                self.assertTrue(any(v != "--" for v in values[1:]), "hover shows no value: " + why)
            else:
                self.assertNotEqual(got["hover"]["readout"], got["idle"]["readout"], why)
            # A drag across the middle zooms x in (where there is more than one x); a double-click zooms back out.
            before, zoomed, reset = got["x"]
            if got["n"] > 1:
                self.assertLess(zoomed[1] - zoomed[0], before[1] - before[0], "did not zoom: " + why)
                self.assertGreaterEqual(zoomed[0], before[0], why)
                self.assertLessEqual(zoomed[1], before[1], why)
            self.assertAlmostEqual(reset[0], before[0], delta=1e-9 * max(1, abs(before[0])), msg=why)
            self.assertAlmostEqual(reset[1], before[1], delta=1e-9 * max(1, abs(before[1])), msg=why)
            # Every chart but the matrix (whose legend is its color scale) hides and shows a series from its legend.
            if chart != "matrix":
                self.assertEqual(got.get("toggle"), [True, False, True], why)
        # The matrix and the timeline also zoom up or down, and say what is under the cursor.
        for chart in ("matrix", "timeline"):
            before, zoomed, reset = seen[chart]["y"]
            self.assertLess(zoomed[1] - zoomed[0], before[1] - before[0], chart)
            self.assertEqual(reset, before, chart)
        m = d["matrix"]
        i, j = seen["matrix"]["target"]["cell"]
        self.assertEqual(seen["matrix"]["hover"]["readout"],
                         "rank %s -> %s: %s" % (m["labels"][i], m["labels"][j], fmt_bytes(m["bytes"][i][j])))
        # The probe hovers the middle of an op no other op of its lane covers, where there is one.
        t = seen["timeline"]["target"]
        if "lane" in t:
            self.assertTrue(seen["timeline"]["hover"]["readout"].startswith(
                d["timeline"]["ranks"][t["lane"]]["label"] + ": " + d["timeline"]["kinds"][t["op"][2]] + " at "),
                seen["timeline"]["hover"]["readout"])
        # Bars: the hovered bar's kind, its calls and its value.
        k = d["kinds"][0]
        self.assertEqual(seen["kind-bytes"]["hover"]["legend"],
                         ["%s (%d calls)" % (k["kind"], k["ops"]), fmt_bytes(k["bytes"])])

    def test_png_writes_each_chart(self):
        pngs = self.out("png")
        p = self.report(self.synth, self.out("p.html"), "--png", pngs)
        self.assertIn("wrote %d charts as PNG" % len(CHARTS), p.stdout)
        for chart in CHARTS:
            w, h = png_size(os.path.join(pngs, chart + ".png"))
            self.assertEqual((w, h), (1000, 640))
        self.assertEqual([f for f in os.listdir(pngs) if f.startswith(".")], [])

    def test_replayed_results_and_flow_completion_times_join_the_report(self):
        replayed = self.out("replayed")
        p = run("replay", self.synth, "--local", "--no-progress", "--algo", "ring", "-o", replayed, timeout=300)
        if p.returncode != 0 and "without Boost" in p.stderr:
            self.skipTest("this dltrace has no socket replay")
        self.assertEqual(p.returncode, 0, p.stderr)
        # A results directory with flow completion times, as dltrace simulate writes them.
        flows = self.out("with-flows")
        shutil.copytree(replayed, flows)
        with open(os.path.join(flows, "flows.csv"), "w") as f:
            f.write("flow,src,dst,bytes,start_ns,fct_ns\n")
            for i in range(50):
                f.write("%d,0,1,1000000,%d,%d\n" % (i, i * 1000, 20000 + i * 997))
        no_column = self.out("no-fct")
        shutil.copytree(replayed, no_column)
        with open(os.path.join(no_column, "flows.csv"), "w") as f:
            f.write("flow,bytes\n1,100\n")
        out = self.out("runs.html")
        p = self.report(self.synth, out, "--results", replayed, "--results", flows, "--results", no_column)
        self.assertIn("no fct_ns column", p.stdout)
        html = dom(out)
        count, errors, message = status(html)
        self.assertEqual(errors, 0, message)
        drawn = charts(html)
        self.assertEqual(drawn["fct"]["points"], 50)
        self.assertEqual(len(drawn["fct"]["legend"]), 2)
        self.assertIn("(50 flows)", drawn["fct"]["legend"][1])
        # Recorded plus three runs, each one line with a point per iteration.
        self.assertEqual(drawn["iterations"]["series"], 4)
        self.assertEqual(drawn["iterations"]["legend"][:2], ["iteration", "recorded"])
        self.assertEqual(len(drawn["iterations"]["legend"]), 5)
        self.assertEqual(drawn["iterations"]["points"], sum(len(r["iteration_ms"]) for r in data_of(out)["runs"]))

    def test_bad_input(self):
        p = run("report", self.out("missing"), "-o", self.out("m.html"))
        self.assertEqual(p.returncode, 1)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertFalse(os.path.exists(self.out("m.html")))
        p = run("report", self.synth)
        self.assertEqual(p.returncode, 2)
        p = run("report", self.synth, "-o", self.out("r.html"), "--results", self.synth)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no rank*.results.json", p.stderr)


if __name__ == "__main__":
    if not CHROMIUM:
        print("skipped: chromium is not installed (apt-get install chromium)")
        sys.exit(77)
    unittest.main(verbosity=2)
