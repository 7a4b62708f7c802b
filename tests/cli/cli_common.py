"""What several command-line tests share: the dltrace program under test and
a synthetic trace set in a fresh temporary directory."""
import os
import subprocess
import tempfile

DLTRACE = os.environ.get("DLTRACE", "dltrace")


def synth_set(prefix, name, *args):
    """`dltrace synth ARGS -o TMP/NAME` in a fresh directory TMP (made with
    PREFIX): returns (TMP, TMP/NAME); a failing synth fails the test class."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    path = os.path.join(tmp, name)
    p = subprocess.run([DLTRACE, "synth", *args, "-o", path], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return tmp, path
