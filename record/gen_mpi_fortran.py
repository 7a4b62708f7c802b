#!/usr/bin/env python3
"""Generates the Fortran MPI wrappers from the one table of C wrappers
(src/mpi_functions.h), so that `mpif.h`, `use mpi` and `use mpi_f08` calls are
recorded exactly like C calls.

usage: gen_mpi_fortran.py mpi_functions.h OUT.inc OUT_SYMBOLS.txt

For each row X(name, kind, (params), (args), before, after) it writes one
function that takes the Fortran arguments (everything by reference, handles
as MPI_Fint, a trailing ierror), builds C views of them under the C parameter
names (handles through PMPI_*_f2c, statuses through PMPI_Status_f2c, 1-based
indices made 0-based, Fortran MPI_IN_PLACE/MPI_BOTTOM made the C ones), runs
the row's own `before` and `after` clauses on those views, and forwards the
untouched Fortran arguments to the Fortran PMPI entry point. A view is built
before the call only when `before` reads it, after the call only when
`after` does. Each such function is exported under every name Fortran
compilers give the routine: mpi_x, mpi_x_, mpi_x__, MPI_X, and Open MPI's
mpi_f08 name mpi_x_f08_. OUT_SYMBOLS.txt lists those names for the build's
symbol check (check_symbols.cmake).
"""
import re
import sys


def split_top(text, sep=","):
    """Splits at separators outside parentheses and brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def strip_parens(text):
    text = text.strip()
    assert text.startswith("(") and text.endswith(")"), text
    return text[1:-1].strip()


def read_rows(path):
    text = open(path).read()
    text = text.replace("\\\n", " ")
    text = re.sub(r"/\*.*?\*/", " ", text)
    start = text.index("#define DLTRACE_MPI_FUNCTIONS(X)") + len("#define DLTRACE_MPI_FUNCTIONS(X)")
    body = text[start:]
    rows, i = [], 0
    while True:
        m = re.compile(r"\bX\(").search(body, i)
        if not m:
            break
        depth, j = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(body[j], 0)
            j += 1
        fields = split_top(body[m.end():j - 1])
        assert len(fields) == 6, fields
        name, kind, params, args, before, after = (re.sub(r"\s+", " ", f) for f in fields)
        params = [p for p in split_top(strip_parens(params)) if p]
        rows.append({"name": name, "kind": kind, "params": [parse_param(p) for p in params],
                     "args": [a for a in split_top(strip_parens(args)) if a],
                     "before": before, "after": after})
        i = j
    return rows


def parse_param(decl):
    m = re.match(r"^(.*?)\s*\b([A-Za-z_]\w*)\s*(\[\])?$", decl)
    assert m, decl
    ctype = re.sub(r"\s+", " ", m.group(1)).replace(" *", "*").strip()
    if m.group(3):
        ctype += "*"
    return ctype, m.group(2)


HANDLE_F2C = {"MPI_Comm": "PMPI_Comm_f2c", "MPI_Datatype": "PMPI_Type_f2c",
              "MPI_Op": "PMPI_Op_f2c", "MPI_Info": "PMPI_Info_f2c",
              "MPI_Group": "PMPI_Group_f2c", "MPI_Request": "PMPI_Request_f2c"}
# Output scalars, and what turns the Fortran value into the C one.
OUT_SCALARS = {"provided": "{f}", "outcount": "{f}", "flag": "{f} != 0",
               "index": "{f} == MPI_UNDEFINED ? MPI_UNDEFINED : {f} - 1"}


def uses(clause, name):
    return re.search(r"\b%s\b" % re.escape(name), clause) is not None


class Wrapper:
    """The Fortran signature and the view code of one table row."""

    def __init__(self, row):
        self.row = row
        self.fparams = []  # (fortran type, fortran name)
        self.forward = []  # what is passed to the Fortran PMPI entry point
        self.before = []   # view code ahead of `before`
        self.after = []    # view code between the call and `after`
        names = [n for _, n in row["params"]]
        # Arrays of requests and statuses are as long as the row's count.
        self.length = next((n for n in ("count", "incount") if n in names), None)
        scalars, arrays = [], []
        for ctype, name in row["params"]:
            (arrays if self.is_array(ctype, name) else scalars).append((ctype, name))
        for ctype, name in scalars + arrays:
            self.add(ctype, name)
        order = {n: i for i, (_, n) in enumerate(row["params"])}
        self.fparams.sort(key=lambda p: order.get(p[1][2:], len(order)))
        self.forward.sort(key=lambda p: order.get(p[0], len(order)))

    @staticmethod
    def is_array(ctype, name):
        return name.startswith("array_of_") or ctype == "const MPI_Datatype*"

    def param(self, ftype, name, forward=None):
        self.fparams.append((ftype, "f_" + name))
        self.forward.append((name, forward or "f_" + name))

    def view(self, name, when, code):
        (self.before if when == "before" else self.after).append(code)

    def wanted(self, name):
        return [w for w in ("before", "after") if uses(self.row[w], name)]

    def add(self, ctype, name):
        row = self.row
        base = ctype.replace("const ", "").rstrip("*")
        if name in ("argc", "argv"):  # Fortran's MPI_Init has neither
            self.before.append(f"{ctype} {name} = nullptr;")
        elif ctype in ("const void*", "void*"):
            self.param(ctype, name)
            self.before.append(f"{ctype} {name} = FortranBuffer(f_{name});")
        elif ctype == "int":
            self.param("MPI_Fint*", name)
            self.before.append(f"int {name} = int(*f_{name});")
        elif ctype == "const int*":
            self.param("const MPI_Fint*", name)
            self.before.append(f"const int* {name} = f_{name};")
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
                self.view(name, when, f"{name}_value = {f2c}(*f_{name});")
        elif ctype.endswith("*") and base in HANDLE_F2C:
            # Arrays of handles: requests (row's count) or per-peer datatypes
            # (the communicator's size).
            f2c = HANDLE_F2C[base]
            n = self.length if base == "MPI_Request" else "FortranCommSize(comm)"
            if name.startswith("send") and "sendbuf" in (p for _, p in row["params"]):
                n = f"sendbuf == MPI_IN_PLACE ? 0 : {n}"  # then the send side is not read
            const = "const " if ctype.startswith("const ") else ""
            self.param(const + "MPI_Fint*", name)
            self.before.append(f"std::vector<{base}> {name}_values;\n{base}* {name} = nullptr;")
            for when in self.wanted(name):
                self.view(name, when,
                          f"{{\n  const int n = {n};\n"
                          f"  {name}_values.resize(size_t(n > 0 ? n : 0));\n"
                          f"  for (size_t i = 0; i < {name}_values.size(); ++i) "
                          f"{name}_values[i] = {f2c}(f_{name}[i]);\n"
                          f"  {name} = {name}_values.data();\n}}")
        else:
            raise SystemExit(f"gen_mpi_fortran: {row['name']}: no Fortran form for '{ctype} {name}'")

    def signature(self):
        return ", ".join([f"{t} {n}" for t, n in self.fparams] + ["MPI_Fint* ierror"])

    def types(self):
        return ", ".join([t for t, _ in self.fparams] + ["MPI_Fint*"])

    def fortran_args(self):
        return ", ".join([n for _, n in self.fparams] + ["ierror"])


def symbol_forms(name):
    low = name.lower()
    return [low, low + "_", low + "__", name.upper()]


def indent(code, n):
    pad = " " * n
    return "\n".join(pad + line if line else line for line in code.split("\n"))


def generate(rows):
    out = ["// Generated by record/gen_mpi_fortran.py from src/mpi_functions.h: do not edit.",
           "// Included at the end of mpi_wrappers.cc.", ""]
    symbols = []
    for row in rows:
        w = Wrapper(row)
        name = row["name"]
        fn = f"Fortran{name[4:]}"
        fwd = ", ".join(v for _, v in w.forward) + (", " if w.forward else "") + "ierror"
        out.append(f"// ---- {name}")
        out.append(f"using {fn}Fn = void({w.types()});")
        pmpi = ["p" + s for s in symbol_forms(name)[:3]] + ["P" + symbol_forms(name)[3]]
        pmpi.append("p" + name.lower() + "_f08_")
        for p in pmpi:
            out.append(f"extern \"C\" void {p}({w.types()}) __attribute__((weak));")
        out.append("namespace dltrace::record {\nnamespace {")
        out.append(f"void {fn}({fn}Fn* forward, {w.signature()}) {{")
        out.append(f"  MpiCall c(OpKind::{row['kind']});")
        out.append("  if (!c.active()) {")
        out.append(f"    forward({w.fortran_args()});")
        out.append("    return;")
        out.append("  }")
        out.append(indent("\n".join(w.before), 2))
        if row["before"]:
            out.append(f"  {{\n    {row['before']};\n  }}")
        out.append(f"  forward({fwd});")
        if w.after:
            out.append(indent("\n".join(w.after), 2))
        if row["after"]:
            out.append(f"  {{\n    {row['after']};\n  }}")
        # Views the clauses did not read are fine: say so to the compiler.
        out.append("  " + " ".join(f"(void){n};" for _, n in row["params"]))
        out.append("}")
        out.append("}  // namespace\n}  // namespace dltrace::record")
        forms = [(s, "p" + s if s[0] == "m" else "P" + s) for s in symbol_forms(name)]
        forms.append((name.lower() + "_f08_", "p" + name.lower() + "_f08_"))
        for sym, target in forms:
            symbols.append(sym)
            out.append(f"extern \"C\" DLTRACE_EXPORT void {sym}({w.signature()}) {{")
            out.append(f"  static {fn}Fn* const forward = FortranEntry<{fn}Fn>({target}, \"{sym}\");")
            out.append(f"  dltrace::record::{fn}(forward, {w.fortran_args()});")
            out.append("}")
        out.append("")
    return "\n".join(out) + "\n", symbols


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    rows = read_rows(sys.argv[1])
    code, symbols = generate(rows)
    for path, text in ((sys.argv[2], code), (sys.argv[3], "\n".join(symbols) + "\n")):
        try:
            if open(path).read() == text:
                continue  # unchanged: keep the time stamp, spare the rebuild
        except OSError:
            pass
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
