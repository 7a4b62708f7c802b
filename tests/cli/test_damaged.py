#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A trace set with one corrupt chunk in the middle of one rank's file: the
reader skips that chunk and reads on, every command says which bytes and
events were lost, `info`, `schedule` and `compare` call the set incomplete
(exit 3, not an error), and `replay` and `simulate` run on what remains."""
import json
import os
import shutil
import struct
import tempfile
import unittest

from views_fixtures import info_json, run, synth_resnet50


def frames(data):
    """[start, end) of each frame after the 8-byte magic (header, then chunks)."""
    out, pos = [], 8
    while pos + 8 <= len(data):
        n = struct.unpack_from("<I", data, pos)[0]
        out.append((pos, pos + 8 + n))
        pos += 8 + n
    return out


class DamagedChunkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dltrace-damaged-")
        cls.set = synth_resnet50(os.path.join(cls.tmp, "set"), 4, 1, 3, "--bucket-mb", "4")
        cls.whole = {r["rank"]: r["ops"] for r in info_json(cls.set)["ranks"]}
        path = os.path.join(cls.set, "rank1.dltrace")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        cls.frames = frames(data)
        assert len(cls.frames) >= 5, cls.frames  # header, >= 3 chunks, footer
        cls.bad = cls.frames[2]  # chunk 1: the second iteration
        for i in range(8):  # 8 bytes flipped inside its payload
            data[cls.bad[0] + 40 + i] ^= 0xFF
        with open(path, "wb") as f:
            f.write(data)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def assert_loss_reported(self, stderr):
        b, e = self.bad
        self.assertIn(f"rank1.dltrace: corrupt chunk 1 at byte {b}: checksum mismatch; "
                      f"skipped bytes {b}-{e} (1 chunk, ", stderr)

    def test_info_reads_on_and_says_incomplete(self):
        p = run("info", self.set, "--json")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assert_loss_reported(p.stderr)
        j = json.loads(p.stdout)
        self.assertFalse(j["complete"])
        got = {r["rank"]: r["ops"] for r in j["ranks"]}
        lost = self.whole[1] - got[1]
        print(f"rank 1: {got[1]} of {self.whole[1]} events read, {lost} lost with chunk 1")
        self.assertIn(f"(1 chunk, {lost} events lost)", p.stderr)
        self.assertGreater(lost, 0)
        # Chunks after the bad one were read: rank 1 lost one iteration of three.
        self.assertEqual(got[1], self.whole[1] * 2 // 3)
        self.assertEqual({r: n for r, n in got.items() if r != 1},
                         {r: n for r, n in self.whole.items() if r != 1})
        self.assertEqual([r["status"] for r in j["ranks"]],
                         ["complete", "damaged", "complete", "complete"])
        self.assertEqual(j["ranks"][1]["skipped"],
                         [{"begin": self.bad[0], "end": self.bad[1], "first_chunk": 1,
                           "chunks_lost": 1, "events_lost": lost, "why": "checksum mismatch"}])

    def test_schedule_replay_simulate_compare_run_on_what_remains(self):
        p = run("schedule", self.set, "--algo", "ring", "--no-steps")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assert_loss_reported(p.stderr)
        self.assertIn("not recorded on rank(s) 1", p.stderr)
        replayed = os.path.join(self.tmp, "replay")
        p = run("replay", self.set, "--local", "--algo", "ring", "-o", replayed)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assert_loss_reported(p.stderr)
        self.assertIn("(all received)", p.stdout + p.stderr)
        runs = [self.set, replayed]
        flow = os.path.join(self.tmp, "flow")
        p = run("simulate", self.set, "--engine", "flow", "--algo", "ring", "-o", flow)
        if "not built" not in p.stderr:
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assert_loss_reported(p.stderr)
            runs.append(flow)
        p = run("compare", *runs)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assert_loss_reported(p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
