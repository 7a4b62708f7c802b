#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Recording under a real Slurm: the test starts its own slurmctld and slurmd
(Debian's, with a minimal configuration in a temporary directory naming this
host as controller and only node), runs a real Open MPI training program
(tests/mpi/mpi_train.c) with 4 tasks in the launch forms users type, and stops
the daemons afterwards, also when a test fails:

  dltrace record -o 'run-%j.%s' -- srun -n 4 --mpi=pmix ./app
  srun -n 4 --mpi=pmix dltrace record -- ./app        (each task its own recorder)
  sbatch: dltrace record -o 'run-%j.%s' -- srun ... twice in one batch script

Skipped (exit 77, with the reason) only where the daemons cannot start: not
root, or the Slurm packages are missing."""
import ctypes
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SKIP = 77
DLTRACE = os.environ["DLTRACE"]
TRAIN = os.environ["DLTRACE_MPI_TRAIN"]
TASKS = 4
STEPS = 3
# mpi_train.c's closed form per rank with its 2 layers: 2 MPI_Bcast at start,
# per step one MPI_Allreduce per layer plus one of the step's statistics,
# and one after training.
EXPECTED_CALLS = {"MPI_Bcast": 2, "MPI_Allreduce": STEPS * (2 + 1) + 1}
# Nodes and jobs change state asynchronously: poll, with room for a busy machine.
POLL_TIMEOUT_S = 180
PROGRAMS = ["slurmctld", "slurmd", "srun", "sbatch", "sinfo", "scontrol", "squeue", "scancel"]
PR_SET_PDEATHSIG = 1


def die_with_parent():
    # The daemons run in the foreground as our children and die with this
    # process even if it is killed (a ctest timeout), not only in tearDown.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Slurm:
    """A one-host Slurm cluster of our own, all its files under ROOT/slurm."""

    def __init__(self, root):
        self.dir = os.path.join(root, "slurm")
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.host = socket.gethostname().split(".")[0]
        self.first_job = 1000 + os.getpid() % 5000
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for k in list(self.env):  # nothing of an enclosing job leaks in
            if k.startswith("SLURM_") and k != "SLURM_CONF":
                del self.env[k]

    def start(self):
        for sub in ("state", "spool"):
            os.makedirs(os.path.join(self.dir, sub))
        d = self.dir
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=dltrace-test
SlurmctldHost={self.host}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
FirstJobId={self.first_job}
MinJobAge=3600
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
NodeName={self.host} CPUs={2 * TASKS} State=UNKNOWN
PartitionName=test Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        for daemon in ("slurmctld", "slurmd"):
            with open(os.path.join(d, daemon + ".out"), "w") as log:
                self.procs.append(subprocess.Popen([daemon, "-D", "-f", self.conf], env=self.env,
                                                   stdout=log, stderr=subprocess.STDOUT,
                                                   preexec_fn=die_with_parent))
        self.wait_for("idle node", lambda: self.run(["sinfo", "-h", "-N", "-o", "%T"]).strip() == "idle")

    def run(self, argv):
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        return p.stdout if p.returncode == 0 else ""

    def wait_for(self, what, ready):
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while not ready():
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode} while waiting for "
                                       f"{what}: {self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {POLL_TIMEOUT_S} s: {self.logs()}")
            time.sleep(0.2)

    def logs(self):
        text = ""
        for name in ("slurmctld.out", "slurmd.out"):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    text += f"\n--- {name}\n" + "".join(f.readlines()[-15:])
            except OSError:
                pass
        return text

    def job_id(self, name):
        """The id Slurm gave the job named NAME, from Slurm itself."""
        for line in self.run(["scontrol", "-o", "show", "job"]).splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if fields.get("JobName") == name:
                return fields["JobId"]
        raise AssertionError(f"scontrol knows no job named {name}")

    def stop(self):
        # Jobs first (a step's tasks run under slurmstepd, not under us), then the daemons.
        try:
            jobs = self.run(["squeue", "-h", "-o", "%i"]).split()
            if jobs:
                subprocess.run(["scancel"] + jobs, env=self.env, timeout=60)
            self.wait_for("empty queue", lambda: not self.run(["squeue", "-h", "-o", "%i"]).strip())
        except Exception as e:  # the daemons go regardless
            print("stopping Slurm:", e, file=sys.stderr)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def dump(path):
    p = subprocess.run([DLTRACE, "dump", path], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return [json.loads(l) for l in p.stdout.splitlines()]


class SlurmRecordTest(unittest.TestCase):
    slurm = None

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="dltrace-slurm-")
        cls.slurm = Slurm(cls.root)
        try:
            cls.slurm.start()
        except BaseException:
            cls.slurm.stop()
            shutil.rmtree(cls.root, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.slurm.stop()
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=self.root)

    def run_in_tmp(self, argv):
        p = subprocess.run(argv, cwd=self.tmp, env=self.slurm.env, capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(p.returncode, 0, f"{argv}\n{p.stdout}\n{p.stderr}")
        return p

    def srun(self, name):
        return ["srun", "-n", str(TASKS), "--mpi=pmix", "--job-name", name]

    def assert_step_traces(self, directory, job, step):
        """One trace per rank of the 4-task step, each knowing its job and step."""
        files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(directory, "*.dltrace")))
        self.assertEqual(files, [f"rank{r}.dltrace" for r in range(TASKS)], directory)
        for r in range(TASKS):
            recs = dump(os.path.join(directory, f"rank{r}.dltrace"))
            h = [x for x in recs if x["type"] == "header"][0]
            self.assertEqual((h["rank"], h["world_size"], h["job_id"]), (r, TASKS, job))
            self.assertEqual(h["rank_env"].get("SLURM_PROCID"), str(r))
            self.assertEqual(h["rank_env"].get("SLURM_STEP_ID"), str(step))
            calls = {}
            for x in recs:
                if x["type"] == "op":
                    calls[x["kind"]] = calls.get(x["kind"], 0) + 1
            for kind, n in EXPECTED_CALLS.items():
                self.assertEqual(calls.get(kind, 0), n, f"rank {r}: {calls}")

    def test_record_around_srun_names_the_directory_by_job_and_step(self):
        p = self.run_in_tmp([DLTRACE, "record", "-o", "run-%j.%s", "--"] +
                            self.srun("around") + [TRAIN, "--steps", str(STEPS)])
        job = self.slurm.job_id("around")
        out = os.path.join(self.tmp, f"run-{job}.0")  # srun's job: its one step is step 0
        self.assert_step_traces(out, job, 0)
        self.assertEqual(p.stderr.count("dltrace: traces in "), 1, p.stderr)
        self.assertIn("dltrace: traces in " + out, p.stderr)
        self.assertIn(f"ranks {TASKS} of {TASKS} on 1 host(s)", p.stderr)

    def test_each_task_recording_shares_one_directory_and_one_summary(self):
        p = self.run_in_tmp(self.srun("per-task") + [DLTRACE, "record", "--", TRAIN, "--steps",
                                                     str(STEPS)])
        job = self.slurm.job_id("per-task")
        out = os.path.join(self.tmp, f"dltrace-{job}.0")
        self.assertEqual(sorted(os.listdir(self.tmp)), [f"dltrace-{job}.0"])
        self.assert_step_traces(out, job, 0)
        # Every task ran its own `dltrace record`; one of them summarised, once all had ended.
        self.assertEqual(p.stderr.count("dltrace: traces in "), 1, p.stderr)
        self.assertIn("dltrace: traces in " + out, p.stderr)
        self.assertIn(f"ranks {TASKS} of {TASKS} on 1 host(s)", p.stderr)
        self.assertEqual(p.stderr.count("dltrace: recording '"), 1, p.stderr)  # task 0's

    def test_each_task_recording_into_one_given_directory(self):
        p = self.run_in_tmp(self.srun("given") + [DLTRACE, "record", "-o", "shared", "--", TRAIN,
                                                  "--steps", str(STEPS)])
        self.assert_step_traces(os.path.join(self.tmp, "shared"), self.slurm.job_id("given"), 0)
        self.assertEqual(p.stderr.count("dltrace: traces in "), 1, p.stderr)

    def test_each_task_recording_never_overwrites_an_earlier_run(self):
        # Job ids are sequential on a cluster of our own: the next job is the last one + 1.
        self.run_in_tmp(["srun", "-n", "1", "--job-name", "before", "true"])
        job = str(int(self.slurm.job_id("before")) + 1)
        # An earlier run that took the name this step would get (as one does when a
        # controller starts afresh and hands out job ids again).
        earlier = os.path.join(self.tmp, f"dltrace-{job}.0")
        os.mkdir(earlier)
        with open(os.path.join(earlier, "rank0.dltrace"), "wb") as f:
            f.write(b"an earlier run's trace")
        self.run_in_tmp(self.srun("again") + [DLTRACE, "record", "--", TRAIN, "--steps", str(STEPS)])
        self.assertEqual(self.slurm.job_id("again"), job)
        with open(os.path.join(earlier, "rank0.dltrace"), "rb") as f:
            self.assertEqual(f.read(), b"an earlier run's trace")
        self.assertEqual(os.listdir(earlier), ["rank0.dltrace"])
        self.assert_step_traces(earlier + "-2", job, 0)

    def test_each_task_refuses_a_given_directory_holding_another_run(self):
        earlier = os.path.join(self.tmp, "earlier")
        os.mkdir(earlier)
        with open(os.path.join(earlier, "rank0.dltrace"), "wb") as f:
            f.write(b"an earlier run's trace")
        p = subprocess.run(self.srun("refused") + [DLTRACE, "record", "-o", "earlier", "--", TRAIN],
                           cwd=self.tmp, env=self.slurm.env, capture_output=True, text=True,
                           timeout=600)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"dltrace: error: {earlier} already holds another run's traces", p.stderr)
        self.assertNotIn("step 1 loss", p.stdout)  # the program never ran
        self.assertEqual(os.listdir(earlier), ["rank0.dltrace"])

    def test_sbatch_script_records_each_step_into_its_own_directory(self):
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write(f"""#!/bin/sh
#SBATCH -n {TASKS}
set -e
{DLTRACE} record -o 'run-%j.%s' -- srun --mpi=pmix {TRAIN} --steps {STEPS}
{DLTRACE} record -o 'run-%j.%s' -- srun --mpi=pmix {TRAIN} --steps {STEPS}
""")
        log = os.path.join(self.tmp, "batch.out")
        p = subprocess.run(["sbatch", "--wait", "--job-name", "batch", "-o", log, script],
                           cwd=self.tmp, env=self.slurm.env, capture_output=True, text=True,
                           timeout=600)
        with open(log) as f:
            self.assertEqual(p.returncode, 0, p.stderr + f.read())
        job = self.slurm.job_id("batch")
        for step in (0, 1):  # a batch script's sruns are its steps 0, 1, ...
            self.assert_step_traces(os.path.join(self.tmp, f"run-{job}.{step}"), job, step)


def main():
    if os.geteuid() != 0:
        print("SKIP: the test starts slurmctld and slurmd, which needs root")
        return SKIP
    missing = [d for d in PROGRAMS if not shutil.which(d)]
    if missing:
        print("SKIP: Slurm is not installed (missing " + ", ".join(missing) +
              "; apt-get install slurmctld slurmd slurm-client, as scripts/install-deps.sh does)")
        return SKIP
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
