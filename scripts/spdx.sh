#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Puts an SPDX-License-Identifier line at the top of every tracked source file
# that lacks one (after a shebang, and after a Python coding line), in the
# comment syntax of the file's language. Idempotent: a file that already has
# the line in its first 5 lines is left alone.
#
#   scripts/spdx.sh            add the line where it is missing
#   scripts/spdx.sh --check    change nothing; list the files that lack it,
#                              exit 1 if any (ctest spdx_headers)
#
# Skipped: files that are not source (data, fixtures, docs), vendored
# third-party code (third_party/, vendor/, extern/ folders) and generated
# files (a name like *_generated.h, or "@generated" / "DO NOT EDIT" in the
# first 5 lines). The identifier is the project's licence (LICENSE).
set -euo pipefail
cd "$(dirname "$0")/.."
ID=GPL-2.0-only
check=0
[ "${1:-}" = --check ] && check=1

# Sets C to the comment that starts the line for FILE, or to nothing when
# FILE is not a source file this script looks after. No subshells: the check
# runs in ctest on loaded machines.
comment_for() {
  local f=$1 base=${1##*/} first=
  C=
  case "$f" in
    third_party/* | */third_party/* | vendor/* | */vendor/* | extern/* | */extern/*) return ;;
  esac
  case "$base" in
    *_generated.h | *.pb.h | *.pb.cc) return ;;
    CMakeLists.txt) C="#"; return ;;
  esac
  case "$base" in
    *.h | *.hh | *.hpp | *.c | *.cc | *.cpp | *.cxx | *.js | *.fbs | *.proto) C="//" ;;
    *.py | *.sh | *.cmake) C="#" ;;
    *.f90 | *.F90 | *.f | *.F) C="!" ;;
    *.css) C="/*" ;;
    *.html) C="<!--" ;;
    *.*) ;;
    *)  # no extension: a script if it starts with a shell or Python shebang
      IFS= read -r first <"$f" || true
      if [[ $first =~ ^#!.*(sh|bash|python3?)([[:space:]]|$) ]]; then C="#"; fi ;;
  esac
}

# Sets TOP to the first 5 lines of FILE.
first_lines() {
  local line i=0
  TOP=
  while [ $i -lt 5 ] && IFS= read -r line; do
    TOP+=$line$'\n'
    i=$((i + 1))
  done <"$1"
}

line_for() {
  case "$1" in
    "/*") echo "/* SPDX-License-Identifier: $ID */" ;;
    "<!--") echo "<!-- SPDX-License-Identifier: $ID -->" ;;
    *) echo "$1 SPDX-License-Identifier: $ID" ;;
  esac
}

missing=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  comment_for "$f"
  [ -n "$C" ] || continue
  first_lines "$f"
  [[ $TOP == *SPDX-License-Identifier:* || $TOP == *@generated* || $TOP == *"DO NOT EDIT"* ]] && continue
  missing+=("$f")
  [ $check = 1 ] && continue
  line=$(line_for "$C")
  tmp=$(mktemp "$f.spdx.XXXXXX")
  # After a shebang (and a Python coding line right after it, PEP 263) or an
  # HTML doctype, else first.
  awk -v line="$line" '
    NR == 1 && (/^#!/ || /^<!DOCTYPE/) { print; next }
    !done && NR <= 2 && /^#.*coding[:=]/ { print; next }
    !done { print line; done = 1 }
    { print }
    END { if (!done) print line }
  ' "$f" >"$tmp"
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
done < <(git ls-files -z)

if [ $check = 1 ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    printf '%s\n' "${missing[@]}"
    echo "spdx: ${#missing[@]} tracked source files lack an SPDX-License-Identifier line; run scripts/spdx.sh" >&2
    exit 1
  fi
  echo "spdx: every tracked source file has an SPDX-License-Identifier line"
else
  echo "spdx: added the line to ${#missing[@]} files"
fi
