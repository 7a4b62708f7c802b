#!/usr/bin/env python3
"""`dltrace report`: one self-contained HTML file, opened from a file:// URL
by a real headless Chromium. Every chart rendered (the page's status element
says no script error, each chart's SVG has marks), a screenshot kept as a
test artifact, --png writes each chart as an image, replayed results and
flow completion times join the recorded run. Skips (exit 77) only when
Chromium is absent."""
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


def browse(url, *extra):
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--virtual-time-budget=5000", *extra, url], capture_output=True, text=True, timeout=120)
    return p


def dom(path):
    p = browse("file://" + os.path.abspath(path), "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def status(html):
    m = re.search(r'<div id="status" data-charts="(\d+)" data-errors="(\d+)">([^<]*)</div>', html)
    assert m, "no status element in the rendered page"
    return int(m.group(1)), int(m.group(2)), m.group(3)


def marks(html):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'data-chart="([a-z-]+)" data-marks="(\d+)"', html)}


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
        html = dom(out)
        charts, errors, message = status(html)
        self.assertEqual(errors, 0, message)
        self.assertTrue(message.startswith("ok"), message)
        self.assertEqual(charts, len(CHARTS))
        drawn = marks(html)
        self.assertEqual(sorted(drawn), sorted(CHARTS))
        expect = CHARTS if self.recorded else [c for c in CHARTS if not c.startswith("res-")]
        for chart in expect:
            self.assertGreater(drawn[chart], 0, chart + " drew nothing")
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
        charts, errors, message = status(dom(out))
        self.assertGreater(errors, 0)
        self.assertTrue(message.startswith("error"), message)

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
        charts, errors, message = status(html)
        self.assertEqual(errors, 0, message)
        drawn = marks(html)
        self.assertGreater(drawn["fct"], 0)
        # Recorded plus three runs, each one line with a point per iteration.
        self.assertEqual(len(re.findall(r'<path[^>]*stroke="#', html.split('data-chart="iterations"')[1].split("</svg>")[0])), 4)

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
