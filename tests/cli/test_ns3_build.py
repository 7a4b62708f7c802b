#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Which ns-3 `dltrace simulate` runs on. The build's choice (Debian's
libns3-dev, or an ns-3 tree through DLTRACE_NS3_TREE) is named by
`dltrace --version` and by the simulate summary; its libraries load without
LD_LIBRARY_PATH; NS_LOG prints exactly when the named build has logging
compiled in. When a built tree is at hand (DLTRACE_NS3_TEST_TREE, or
build-ns3-tree/ under the source root, as scripts/ns3-contrib-build.sh makes
it), configuring dltrace with -DDLTRACE_NS3_TREE=TREE takes that tree's
libraries; otherwise that part is skipped. A path that is not a built tree is
one configure error."""
import glob
import os
import re
import subprocess
import tempfile
import unittest

DLTRACE = os.environ.get("DLTRACE", "dltrace")
TREE_IN_USE = os.environ.get("DLTRACE_NS3_TREE_IN_USE", "")
SOURCE_DIR = os.environ.get("DLTRACE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "NS_LOG")}
    env.update(extra)
    return env


def tree_settings(tree):
    """build_profile and NS3_LOG as the tree's own configure recorded them."""
    settings = {}
    with open(os.path.join(tree, "cmake-cache", "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^(build_profile:INTERNAL|NS3_LOG:BOOL)=(.*)$", line.strip())
            if m:
                settings[m.group(1).split(":")[0]] = m.group(2)
    return settings


def test_tree():
    tree = os.environ.get("DLTRACE_NS3_TEST_TREE") or TREE_IN_USE
    if not tree:
        found = sorted(glob.glob(os.path.join(SOURCE_DIR, "build-ns3-tree", "ns3-*", "ns-3.*", "build", "lib")))
        tree = os.path.dirname(os.path.dirname(found[0])) if found else ""
    return tree


class Ns3BuildTest(unittest.TestCase):
    def version_line(self):
        r = subprocess.run([DLTRACE, "--version"], capture_output=True, text=True, env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        # One line per simulator after the version; the ns-3 one names its build.
        lines = [l for l in r.stdout.splitlines()[1:] if l.startswith("ns-3 simulator: ")]
        self.assertEqual(len(lines), 1, r.stdout)
        return lines[0][len("ns-3 simulator: "):]

    def test_version_names_the_ns3_in_use(self):
        described = self.version_line()
        if TREE_IN_USE:
            s = tree_settings(TREE_IN_USE)
            logs = "compiled in" if s.get("NS3_LOG") == "ON" or s.get("build_profile") == "debug" else "compiled out"
            with open(os.path.join(TREE_IN_USE, "VERSION")) as f:
                version = f.read().strip()
            # A tree built with its mpi module (NS3_MPI=1) adds ", with MPI" (--partitions N).
            import glob
            mpi = ", with MPI" if glob.glob(os.path.join(TREE_IN_USE, "build", "lib", "libns3*-mpi*.so")) else ""
            self.assertEqual(described, "ns-3 %s tree at %s (profile %s, NS_LOG %s)%s"
                             % (version, TREE_IN_USE, s["build_profile"], logs, mpi))
        else:
            self.assertTrue(described.startswith("installed ns-3 "), described)

    def test_libraries_resolve_without_ld_library_path(self):
        r = subprocess.run(["ldd", DLTRACE], capture_output=True, text=True, env=clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        core = [l for l in r.stdout.splitlines() if re.search(r"libns3[^ ]*-core[^ ]*\.so", l)]
        self.assertEqual(len(core), 1, r.stdout)
        self.assertNotIn("not found", r.stdout)
        path = core[0].split("=>")[1].split()[0]
        if TREE_IN_USE:
            self.assertEqual(os.path.realpath(os.path.dirname(path)),
                             os.path.realpath(os.path.join(TREE_IN_USE, "build", "lib")), core[0])
        else:
            self.assertNotIn("build-ns3-tree", path)

    def test_simulate_names_the_ns3_and_logs_as_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "r50")
            r = subprocess.run([DLTRACE, "synth", "--model", "resnet50", "--ranks", "2", "--ranks-per-host", "1",
                                "--iterations", "1", "-o", trace], capture_output=True, text=True, env=clean_env())
            self.assertEqual(r.returncode, 0, r.stderr)
            # Node's constructor logs at LOG_FUNCTION inside libns3-network.
            r = subprocess.run([DLTRACE, "simulate", trace, "--stop", "0.0002", "--no-flowmon",
                                "-o", os.path.join(tmp, "sim")], capture_output=True, text=True,
                               env=clean_env(NS_LOG="Node=level_function|prefix_func"), timeout=300)
            described = self.version_line()
            self.assertIn("results: ", r.stdout, r.stderr[-2000:])
            self.assertIn("# on " + described + "\n", r.stdout)
            logged = "Node:Node(" in r.stdout + r.stderr
            self.assertEqual(logged, "NS_LOG compiled in" in described, described)

    def test_configure_against_a_tree(self):
        tree = test_tree()
        if not tree:
            self.skipTest("no built ns-3 tree (scripts/ns3-contrib-build.sh, or DLTRACE_NS3_TEST_TREE)")
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([CMAKE, "-S", SOURCE_DIR, "-B", tmp, "-DDLTRACE_NS3_TREE=" + tree],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            self.assertIn("-- dltrace: building the ns-3 module against the ns-3 ", r.stdout)
            self.assertIn(" tree at %s (profile " % os.path.abspath(tree), r.stdout)
            with open(os.path.join(tmp, "CMakeCache.txt")) as f:
                self.assertIn("DLTRACE_NS3_TREE:PATH=%s\n" % tree, f.read())

    def test_configure_rejects_a_path_that_is_no_built_tree(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([CMAKE, "-S", SOURCE_DIR, "-B", os.path.join(tmp, "b"),
                                "-DDLTRACE_NS3_TREE=" + tmp], capture_output=True, text=True, timeout=600)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("DLTRACE_NS3_TREE=%s is not a built ns-3 tree" % tmp, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
