#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Generates every wrapper of the interposer from one table per API, the same
way for each: tables/mpi.py gives the C MPI and the Fortran MPI wrappers,
tables/nccl.py the NCCL ones. Run by CMake at build time.

usage: gen_wrappers.py mpi|nccl OUTDIR

A row is F(name, kind, params, before=..., after=...): the function's C
parameters as in the API's header, the OpKind it records, and two C++
clauses run only while the call is followed, `before` ahead of the real call
and `after` behind it. Nonblocking(name, kind, of=...) is MPI's nonblocking
form of an earlier row: its parameters and a request, the same `before`, and
the request left pending. The clauses call ordinary functions of
mpi_wrappers.cc / nccl_wrappers.cc on the call object `c` (MpiCall,
NcclCall); every wrapper has the same shape:

    Call c(OpKind::kind);
    if (!c.active()) return real(args);   // not followed: forward untouched
    before; rc = real(args); after; return rc;

A C MPI row whose clauses only describe the call (`before` made of
Collective, Reduction and PointToPoint, no `after`) also gets a fast form
in front of that one, with the same clauses in their fast variants
(FAST_CLAUSES; mpi_wrappers.cc, FastMpiCall), which hands the call to the
ordinary form whenever one of them says it cannot take it.

Outputs in OUTDIR:
  mpi:  mpi_wrappers.inc (C), mpi_fortran_wrappers.inc (mpif.h, use mpi,
        use mpi_f08: every mangled name), mpi_weak.inc (weak PMPI references),
        mpi_symbols.txt (every exported name), mpi_argcheck.inc and
        mpi_argcheck_names.inc (the argument check, tools/mpi_argcheck.cc)
  nccl: nccl_wrappers.inc, nccl_functions.inc (X(name, (params), (args))
        rows for nccl_abi_check.cc), nccl_symbols.txt
check_symbols.cmake compares the library's exports with the *_symbols.txt.
"""
import os
import re
import sys


class F:
    """One intercepted function."""

    def __init__(self, name, kind, params, before="", after=""):
        self.name, self.kind, self.before, self.after = name, kind, before, after
        self.params = [parse_param(p) for p in split_top(params) if p]
        self.args = [n for _, n in self.params]


class Nonblocking:
    """MPI's nonblocking form (MPI_Igather) of an earlier row OF (MPI_Gather)."""

    def __init__(self, name, kind, of):
        self.name, self.kind, self.of = name, kind, of

    def row(self, earlier):
        blocking = earlier.get(self.of)
        if blocking is None or blocking.after:
            raise SystemExit(f"gen_wrappers: {self.name}: no blocking row {self.of} above it "
                             "without an `after`")
        row = F(self.name, self.kind, "", before=blocking.before,
                after="c.Pend(request, nullptr, false)")
        row.params = blocking.params + [("MPI_Request*", "request")]
        row.args = [n for _, n in row.params]
        return row


def split_top(text, sep=","):
    """Splits at separators outside parentheses and brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def parse_param(decl):
    """'const int counts[]' -> ('const int*', 'counts')."""
    decl = " ".join(decl.split())
    array = decl.endswith("[]")
    if array:
        decl = decl[:-2].rstrip()
    i = len(decl)
    while i > 0 and (decl[i - 1].isalnum() or decl[i - 1] == "_"):
        i -= 1
    ctype, name = decl[:i].strip().replace(" *", "*"), decl[i:]
    if not ctype or not name:
        raise SystemExit(f"gen_wrappers: cannot read parameter '{decl}'")
    return ctype + ("*" if array else ""), name


def load_table(api):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tables", api + ".py")
    scope = {"F": F, "Nonblocking": Nonblocking}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), scope)
    rows, earlier = [], {}
    for row in scope["FUNCTIONS"]:
        if isinstance(row, Nonblocking):
            row = row.row(earlier)
        rows.append(row)
        earlier[row.name] = row
    names = [r.name for r in rows]
    if len(set(names)) != len(names):
        raise SystemExit(f"gen_wrappers: {path}: a function is listed twice")
    return rows


def clause(code):
    return f"  {{\n    {code};\n  }}\n" if code else ""


def c_params(row):
    return ", ".join(f"{t} {n}" for t, n in row.params)


# ---- C wrappers (MPI and NCCL): one shape -----------------------------------

def c_wrapper(row, ret, real_setup, real, call, rc_store):
    args = ", ".join(row.args)
    return (f"extern \"C\" DLTRACE_EXPORT {ret} {row.name}({c_params(row)}) {{\n"
            f"{real_setup}"
            f"  {call} c(OpKind::{row.kind});\n"
            f"  if (!c.active()) return {real}({args});\n"
            f"{clause(row.before)}"
            f"  {rc_store} = {real}({args});\n"
            f"{clause(row.after)}"
            f"  return {rc_store.split()[-1]};\n"
            f"}}\n")


# Clauses with a fast form (mpi_wrappers.cc, FastMpiCall): the same
# arguments, a check-and-fill that answers false where the call needs the
# ordinary path.
FAST_CLAUSES = {"Collective": "FastCollective", "Reduction": "FastReduction",
                "PointToPoint": "FastPointToPoint"}


def fast_clauses(row):
    """The row's `before` as fast clauses joined by &&, or None when the row
    has no fast form (an `after` clause, or a clause without a fast form)."""
    if row.after or not row.before:
        return None
    calls = [part.strip() for part in row.before.split(";") if part.strip()]
    fast = []
    for call in calls:
        m = re.fullmatch(r"(\w+)\((.*)\)", call)
        if not m or m.group(1) not in FAST_CLAUSES:
            return None
        fast.append(f"{FAST_CLAUSES[m.group(1)]}({m.group(2)})")
    return " && ".join(fast)


def mpi_c(rows):
    out = [HEADER % "tables/mpi.py", "// Included by mpi_wrappers.cc after MpiCall and the clauses' functions.", ""]
    for row in rows:
        args = ", ".join(row.args)
        late = (f"  if (__builtin_expect(&P{row.name} == nullptr, 0))\n"
                f"    return reinterpret_cast<decltype(&P{row.name})>(LateMpiSymbol(\"P{row.name}\"))"
                f"({args});\n")
        wrapper = c_wrapper(row, "int", late, "P" + row.name, "MpiCall", "int rc")
        fast = fast_clauses(row)
        if fast is None:
            out.append(wrapper)
            continue
        # The ordinary wrapper, under another name and out of line, behind
        # the fast form (see FastMpiCall).
        ordinary = f"Ordinary{row.name}"
        out.append(wrapper.replace(f'extern "C" DLTRACE_EXPORT int {row.name}(',
                                   f"__attribute__((noinline)) static int {ordinary}(", 1))
        out.append(f"extern \"C\" DLTRACE_EXPORT int {row.name}({c_params(row)}) {{\n"
                   f"  if (__builtin_expect(&P{row.name} != nullptr, 1)) {{\n"
                   f"    FastMpiCall c;\n"
                   f"    if (c.Begin(OpKind::{row.kind}) && {fast}) {{\n"
                   f"      if (!c.Enter()) return c.CallOnMonotonic(&P{row.name}, {args});\n"
                   f"      int rc = P{row.name}({args});\n"
                   f"      c.Exit();\n"
                   f"      return rc;\n"
                   f"    }}\n"
                   f"  }}\n"
                   f"  return {ordinary}({args});\n"
                   f"}}\n")
    return "\n".join(out)


def mpi_weak(rows):
    return HEADER % "tables/mpi.py" + "\n" + "".join(f"#pragma weak P{r.name}\n" for r in rows)


def nccl_c(rows):
    out = [HEADER % "tables/nccl.py", "// Included by nccl_wrappers.cc after NcclCall and the clauses' functions.", ""]
    for row in rows:
        out.append(f"extern \"C\" DLTRACE_EXPORT ncclResult_t {row.name}({c_params(row)});")
    out.append("")
    for row in rows:
        setup = (f"  static const auto real = Real(\"{row.name}\", &{row.name});\n"
                 f"  if (!real) return Missing(\"{row.name}\");\n")
        out.append(c_wrapper(row, "ncclResult_t", setup, "real", "NcclCall", "c.rc"))
    return "\n".join(out)


def nccl_functions(rows):
    lines = [f"X({r.name}, ({c_params(r)}), ({', '.join(r.args)}))" for r in rows]
    return HEADER % "tables/nccl.py" + "\n" + "\n".join(lines) + "\n"


HEADER = "// Generated by record/gen_wrappers.py from %s: do not edit.\n"


# ---- Fortran MPI wrappers ---------------------------------------------------
# For each row, one function takes the Fortran arguments (everything by
# reference, handles as MPI_Fint, a trailing ierror), builds C views of them
# under the C parameter names (handles through PMPI_*_f2c, statuses through
# PMPI_Status_f2c, 1-based indices made 0-based, Fortran MPI_IN_PLACE and
# MPI_BOTTOM made the C ones), runs the row's `before` and `after` on those
# views, and forwards the untouched Fortran arguments to the Fortran PMPI
# entry point. It is exported under every name Fortran compilers give the
# routine: mpi_x, mpi_x_, mpi_x__, MPI_X, and Open MPI's mpi_f08 mpi_x_f08_.

HANDLE_F2C = {"MPI_Comm": "PMPI_Comm_f2c", "MPI_Datatype": "PMPI_Type_f2c",
              "MPI_Op": "PMPI_Op_f2c", "MPI_Info": "PMPI_Info_f2c",
              "MPI_Group": "PMPI_Group_f2c", "MPI_Request": "PMPI_Request_f2c",
              "MPI_Win": "PMPI_Win_f2c", "MPI_Message": "PMPI_Message_f2c"}
# Output scalars, and what turns the Fortran value into the C one.
OUT_SCALARS = {"provided": "{f}", "outcount": "{f}", "flag": "{f} != 0",
               "index": "{f} == MPI_UNDEFINED ? MPI_UNDEFINED : {f} - 1"}


def uses(code, name):
    return re.search(r"\b%s\b" % re.escape(name), code) is not None


class FortranWrapper:
    """The Fortran signature and the view code of one table row."""

    def __init__(self, row):
        self.row = row
        self.fparams = []  # (fortran type, fortran name)
        self.forward = []  # what is passed to the Fortran PMPI entry point
        self.before = []   # view code ahead of `before`
        self.after = []    # view code between the call and `after`
        names = row.args
        # Arrays of requests and statuses are as long as the row's count.
        self.length = next((n for n in ("count", "incount") if n in names), None)
        scalars, arrays = [], []
        for ctype, name in row.params:
            (arrays if self.is_array(ctype, name) else scalars).append((ctype, name))
        for ctype, name in scalars + arrays:
            self.add(ctype, name)
        order = {n: i for i, n in enumerate(names)}
        self.fparams.sort(key=lambda p: order.get(p[1][2:], len(order)))
        self.forward.sort(key=lambda p: order.get(p[0], len(order)))

    @staticmethod
    def is_array(ctype, name):
        return name.startswith("array_of_") or ctype == "const MPI_Datatype*"

    def param(self, ftype, name, forward=None):
        self.fparams.append((ftype, "f_" + name))
        self.forward.append((name, forward or "f_" + name))

    def view(self, when, code):
        (self.before if when == "before" else self.after).append(code)

    def wanted(self, name):
        return [w for w in ("before", "after") if uses(getattr(self.row, w), name)]

    def add(self, ctype, name):
        row = self.row
        base = ctype.replace("const ", "").rstrip("*")
        if name in ("argc", "argv"):  # Fortran's MPI_Init has neither
            self.before.append(f"{ctype} {name} = nullptr;")
        elif ctype in ("const void*", "void*"):
            self.param(ctype, name)
            self.before.append(f"{ctype} {name} = FortranBuffer(f_{name});")
        elif ctype in ("int", "MPI_Aint"):
            # INTEGER, INTEGER(KIND=MPI_ADDRESS_KIND): by reference.
            ftype = "MPI_Fint" if ctype == "int" else "MPI_Aint"
            self.param(ftype + "*", name)
            self.before.append(f"{ctype} {name} = {ctype}(*f_{name});")
        elif ctype in ("const int*", "const MPI_Aint*"):
            ftype = "MPI_Fint" if ctype == "const int*" else "MPI_Aint"
            self.param(f"const {ftype}*", name)
            self.before.append(f"{ctype} {name} = f_{name};")
        elif ctype == "int*" and name in OUT_SCALARS:
            self.param("MPI_Fint*", name)
            self.before.append(f"int {name}_value = 0;\nint* {name} = &{name}_value;")
            conv = OUT_SCALARS[name].format(f=f"*f_{name}")
            self.after.append(f"{name}_value = {conv};")
        elif ctype == "int*" and name == "array_of_indices":
            self.param("MPI_Fint*", name)
            self.before.append(f"std::vector<int> {name}_values;\nint* {name} = nullptr;")
            self.after.append(
                f"if (outcount_value != MPI_UNDEFINED) {{\n"
                f"  for (int i = 0; i < outcount_value; ++i) {name}_values.push_back(f_{name}[i] - 1);\n"
                f"  {name} = {name}_values.data();\n}}")
        elif ctype in HANDLE_F2C:
            self.param("MPI_Fint*", name)
            self.before.append(f"{ctype} {name} = {HANDLE_F2C[ctype]}(*f_{name});")
        elif ctype == "MPI_Status*" and not name.startswith("array_of_"):
            self.param("MPI_Fint*", name, f"f_{name}_used")
            self.before.append(
                f"MPI_Fint {name}_fortran[kFortranStatusInts];\n"
                f"MPI_Fint* f_{name}_used = IsFortranStatusIgnore(f_{name}) ? {name}_fortran : f_{name};\n"
                f"MPI_Status {name}_value{{}};\nMPI_Status* {name} = &{name}_value;")
            self.after.append(f"PMPI_Status_f2c(f_{name}_used, &{name}_value);")
        elif ctype == "MPI_Status*":
            n = self.length
            self.param("MPI_Fint*", name, f"f_{name}_used")
            self.before.append(
                f"std::vector<MPI_Fint> {name}_fortran;\nMPI_Fint* f_{name}_used = f_{name};\n"
                f"if (IsFortranStatusesIgnore(f_{name})) {{\n"
                f"  {name}_fortran.resize(size_t({n} > 0 ? {n} : 0) * kFortranStatusInts);\n"
                f"  f_{name}_used = {name}_fortran.data();\n}}\n"
                f"std::vector<MPI_Status> {name}_values(size_t({n} > 0 ? {n} : 0));\n"
                f"MPI_Status* {name} = {name}_values.data();")
            self.after.append(
                f"for (size_t i = 0; i < {name}_values.size(); ++i)\n"
                f"  PMPI_Status_f2c(f_{name}_used + i * kFortranStatusInts, &{name}_values[i]);")
        elif ctype.endswith("*") and base in HANDLE_F2C and not self.is_array(ctype, name):
            # One handle the call writes (a new communicator, a request) or
            # reads and writes (MPI_Comm_free, MPI_Wait).
            f2c = HANDLE_F2C[base]
            self.param("MPI_Fint*", name)
            self.before.append(f"{base} {name}_value = {base}();\n{base}* {name} = &{name}_value;")
            for when in self.wanted(name):
                self.view(when, f"{name}_value = {f2c}(*f_{name});")
        elif ctype.endswith("*") and base in HANDLE_F2C:
            # Arrays of handles: requests (row's count) or per-peer datatypes
            # (the communicator's size, or its neighbour count).
            f2c = HANDLE_F2C[base]
            n = self.length if base == "MPI_Request" else "FortranCommSize(comm)"
            if row.name.startswith(("MPI_Neighbor_", "MPI_Ineighbor_")):
                n = ("FortranNeighbors(comm, false)" if name.startswith("send")
                     else "FortranNeighbors(comm, true)")
            if name.startswith("send") and "sendbuf" in row.args:
                n = f"sendbuf == MPI_IN_PLACE ? 0 : {n}"  # then the send side is not read
            const = "const " if ctype.startswith("const ") else ""
            self.param(const + "MPI_Fint*", name)
            self.before.append(f"std::vector<{base}> {name}_values;\n{base}* {name} = nullptr;")
            for when in self.wanted(name):
                self.view(when,
                          f"{{\n  const int n = {n};\n"
                          f"  {name}_values.resize(size_t(n > 0 ? n : 0));\n"
                          f"  for (size_t i = 0; i < {name}_values.size(); ++i) "
                          f"{name}_values[i] = {f2c}(f_{name}[i]);\n"
                          f"  {name} = {name}_values.data();\n}}")
        else:
            raise SystemExit(f"gen_wrappers: {row.name}: no Fortran form for '{ctype} {name}'")

    def signature(self):
        return ", ".join([f"{t} {n}" for t, n in self.fparams] + ["MPI_Fint* ierror"])

    def types(self):
        return ", ".join([t for t, _ in self.fparams] + ["MPI_Fint*"])

    def fortran_args(self):
        return ", ".join([n for _, n in self.fparams] + ["ierror"])


def fortran_names(name):
    low = name.lower()
    return [low, low + "_", low + "__", name.upper(), low + "_f08_"]


def indent(code, n):
    pad = " " * n
    return "\n".join(pad + line if line else line for line in code.split("\n"))


def mpi_fortran(rows):
    out = [HEADER % "tables/mpi.py", "// Included at the end of mpi_wrappers.cc.", ""]
    symbols = []
    for row in rows:
        w = FortranWrapper(row)
        fn = f"Fortran{row.name[4:]}"
        fwd = ", ".join(v for _, v in w.forward) + (", " if w.forward else "") + "ierror"
        out.append(f"// ---- {row.name}")
        out.append(f"using {fn}Fn = void({w.types()});")
        names = fortran_names(row.name)
        targets = [("P" if s[0] == "M" else "p") + s for s in names]
        for p in targets:
            out.append(f"extern \"C\" void {p}({w.types()}) __attribute__((weak));")
        out.append("namespace dltrace::record {\nnamespace {")
        out.append(f"void {fn}({fn}Fn* forward, {w.signature()}) {{")
        out.append(f"  MpiCall c(OpKind::{row.kind});")
        out.append("  if (!c.active()) {")
        out.append(f"    forward({w.fortran_args()});")
        out.append("    return;")
        out.append("  }")
        out.append(indent("\n".join(w.before), 2))
        if row.before:
            out.append(f"  {{\n    {row.before};\n  }}")
        out.append(f"  forward({fwd});")
        if w.after:
            out.append(indent("\n".join(w.after), 2))
        if row.after:
            out.append(f"  {{\n    {row.after};\n  }}")
        # Views the clauses did not read are fine: say so to the compiler.
        out.append("  " + " ".join(f"(void){n};" for n in row.args))
        out.append("}")
        out.append("}  // namespace\n}  // namespace dltrace::record")
        for sym, target in zip(names, targets):
            symbols.append(sym)
            out.append(f"extern \"C\" DLTRACE_EXPORT void {sym}({w.signature()}) {{")
            out.append(f"  static {fn}Fn* const forward = FortranEntry<{fn}Fn>({target}, \"{sym}\");")
            out.append(f"  dltrace::record::{fn}(forward, {w.fortran_args()});")
            out.append("}")
        out.append("")
    return "\n".join(out) + "\n", symbols


# ---- the argument check (record/tools/mpi_argcheck.cc) -----------------------
# For every C row, MPI_x and PMPI_x that describe the arguments the same way
# (ArgsOf_x: each argument's value and what it points to that the call reads
# or writes), so that a checking library in front of the recorder compares
# what the program passed with what PMPI got, and what PMPI returned with
# what the program got back.

HANDLE_POINTERS = ("MPI_Request*", "MPI_Comm*", "MPI_Win*", "MPI_Message*")


def argcheck_arg(row, ctype, name):
    """The ArgsOf_ line for one parameter."""
    length = next((n for n in ("count", "incount") if n in row.args), None)
    if "*" not in ctype or ctype in ("void*", "const void*", "char***") or ctype.startswith("const "):
        return f'Value(a, "{name}", {name});'  # a scalar, a handle, a buffer, an input array
    if name == "argc":
        return f'Value(a, "{name}", {name});'
    if ctype == "MPI_Status*":
        if name.startswith("array_of_"):
            return f'Statuses(a, "{name}", {name}, {length}, false);'
        return f'Statuses(a, "{name}", {name}, 1, true);'
    if ctype in HANDLE_POINTERS or ctype == "int*":
        n = length if name.startswith("array_of_") else "1"
        return f'Points(a, "{name}", {name}, {n});'
    raise SystemExit(f"gen_wrappers: {row.name}: the argument check has no rule for '{ctype} {name}'")


def mpi_argcheck(rows):
    names = [HEADER % "tables/mpi.py", "constexpr const char* kFunctions[] = {"]
    names += [f'    "{r.name}",' for r in rows] + ["};", ""]
    out = [HEADER % "tables/mpi.py", "// Included at the end of record/tools/mpi_argcheck.cc.", ""]
    for i, row in enumerate(rows):
        args = ", ".join(row.args)
        params = c_params(row)
        lines = [argcheck_arg(row, t, n) for t, n in row.params]
        out.append(f"// ---- {row.name}")
        out.append("namespace argcheck {\nnamespace {")
        out.append(f"void ArgsOf_{row.name}(Args& a{', ' if params else ''}{params}) {{")
        out.append("  (void)a;" if not lines else "\n".join("  " + l for l in lines))
        out.append("}\n}  // namespace\n}  // namespace argcheck")
        out.append(f"extern \"C\" DLTRACE_EXPORT int {row.name}({params}) {{\n"
                   f"  using namespace argcheck;\n"
                   f"  static const auto next = Next<decltype(&P{row.name})>(\"{row.name}\");\n"
                   f"  Call call({i});\n"
                   f"  ArgsOf_{row.name}(call.in(){', ' if args else ''}{args});\n"
                   f"  const int rc = next({args});\n"
                   f"  Args out;\n"
                   f"  ArgsOf_{row.name}(out{', ' if args else ''}{args});\n"
                   f"  call.Returned(rc, out);\n"
                   f"  return rc;\n}}")
        out.append(f"extern \"C\" DLTRACE_EXPORT int P{row.name}({params}) {{\n"
                   f"  using namespace argcheck;\n"
                   f"  static const auto real = Next<decltype(&P{row.name})>(\"P{row.name}\");\n"
                   f"  Frame* f = Forwarding({i});\n"
                   f"  if (f == nullptr) return real({args});\n"
                   f"  Args got;\n"
                   f"  ArgsOf_{row.name}(got{', ' if args else ''}{args});\n"
                   f"  Enter(f, got);\n"
                   f"  const int rc = real({args});\n"
                   f"  Args out;\n"
                   f"  ArgsOf_{row.name}(out{', ' if args else ''}{args});\n"
                   f"  Leave(f, rc, std::move(out));\n"
                   f"  return rc;\n}}")
        out.append("")
    return "\n".join(names) + "\n", "\n".join(out) + "\n"


def write(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return  # unchanged: keep the time stamp, spare the rebuild
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("mpi", "nccl"):
        raise SystemExit(__doc__)
    api, outdir = sys.argv[1], sys.argv[2]
    rows = load_table(api)
    if api == "mpi":
        fortran, fortran_symbols = mpi_fortran(rows)
        write(os.path.join(outdir, "mpi_wrappers.inc"), mpi_c(rows))
        write(os.path.join(outdir, "mpi_fortran_wrappers.inc"), fortran)
        write(os.path.join(outdir, "mpi_weak.inc"), mpi_weak(rows))
        names, argcheck = mpi_argcheck(rows)
        write(os.path.join(outdir, "mpi_argcheck_names.inc"), names)
        write(os.path.join(outdir, "mpi_argcheck.inc"), argcheck)
        symbols = [r.name for r in rows] + fortran_symbols
    else:
        write(os.path.join(outdir, "nccl_wrappers.inc"), nccl_c(rows))
        write(os.path.join(outdir, "nccl_functions.inc"), nccl_functions(rows))
        symbols = [r.name for r in rows]
    write(os.path.join(outdir, api + "_symbols.txt"), "\n".join(symbols) + "\n")


if __name__ == "__main__":
    main()
