# SPDX-License-Identifier: GPL-2.0-only
"""What the fast-forward benchmarks (bench-ff.sh, bench-ff-sets.sh,
bench-ff-matrix.py) read of a run and how they compare two: a module, not a
script to run."""
import csv
import glob
import json
import os
import re


def load(work, name):
    """The run WORK/NAME (its output directory, NAME.log and NAME.time with
    /usr/bin/time's "%e %U"): wall and user seconds, the log, link
    transmissions simulated (credited ones left out), PFC pause frames, the
    rows of messages.csv and per endpoint (results file under the directory)
    bytes sent, bytes received and whether it completed."""
    d = os.path.join(work, name)
    with open(d + ".log") as f:
        log = f.read()
    with open(d + ".time") as f:
        wall, user = map(float, f.read().split()[:2])
    packets = int(re.search(r"network: (\d+) packets on links", log).group(1))
    pauses = int(re.search(r"rdma: (\d+) PFC pause frames", log).group(1))
    credited = re.search(r"(\d+) link transmissions credited", log)
    with open(os.path.join(d, "messages.csv")) as f:
        messages = list(csv.DictReader(f))
    endpoints = {}
    for p in sorted(glob.glob(os.path.join(d, "rank*.results.json")) +
                    glob.glob(os.path.join(d, "job*", "rank*.results.json"))):
        with open(p) as f:
            r = json.load(f)
        endpoints[os.path.relpath(p, d)] = (r["bytes_sent"], r["bytes_received"], r["complete"])
    return dict(log=log, wall=wall, user=user, simulated=packets - (int(credited.group(1)) if credited else 0),
                pauses=pauses, messages=messages, endpoints=endpoints)


def pct(v, f):
    """The F quantile of the sorted values V."""
    return v[int(f * (len(v) - 1))]


def diff(a, b):
    """B against A, in percent (0 where A is 0)."""
    return 100.0 * (b - a) / a if a else 0.0
