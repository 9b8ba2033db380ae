#!/bin/sh
# layering.sh — the tree's folder layering (ci/layers.tsv) checked, and README's layout
# table printed from it (ctest unit.layering; docs/architecture.md).
#
#   ci/layering.sh [SRC]           check: exit 0, or 1 with every broken rule on stderr
#   ci/layering.sh --build [SRC]   the same without rule 4 (the build runs it, so that an
#                                  #include against the layering fails to build)
#   ci/layering.sh --table [SRC]   print the README's layout table (Markdown)
#
# The check, over every C / C++ / CUDA source under engine/, backends/, harness/ and reports/:
#   1. its folder is listed in layers.tsv with a layer (a number), and every listed folder
#      exists (so the table names exactly the tree's folders);
#   2. every folder a row uses (column 3, which CMakeLists.txt links) is listed with a lower
#      layer: no dependency points up or sideways, so there is no cycle between folders
#      (nor between the build's per-folder libraries);
#   3. each #include "…" that names a file of the tree (looked up as the compiler does: the
#      including file's folder, then the include paths SRC and SRC/engine) is in the same
#      folder or in a folder its row uses (and so of a lower layer);
#   4. README.md's table between the markers "<!-- layout:begin" and "<!-- layout:end" is
#      what --table prints.
# Calls are the linker's to check: the build links each folder's library alone with the
# libraries of what it uses (CMakeLists.txt, "layering: link checks").
set -eu
table=0
readme=1
[ "${1:-}" = --table ] && { table=1; shift; }
[ "${1:-}" = --build ] && { readme=0; shift; }
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 2
layers=ci/layers.tsv
[ -r "$layers" ] || { echo "layering: cannot read $src/$layers" >&2; exit 2; }

print_table() {
    echo "| path | layer | what |"
    echo "|---|---|---|"
    awk -F'\t' '!/^#/ && NF >= 4 { printf "| `%s/` | %s | %s |\n", $1, $2, $4 }' "$layers"
}
if [ $table = 1 ]; then print_table; exit 0; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
awk -F'\t' '!/^#/ { if (NF < 4) { printf "layering: %s: a row is folder<TAB>layer<TAB>uses<TAB>what: %s\n", FILENAME, $0 > "/dev/stderr"; bad = 1; next }
                   print $1 "\t" $2 "\t" $3 } END { exit bad }' "$layers" >"$tmp/layers" || bad=1
while IFS="$(printf '\t')" read -r dir _ _; do
    [ -d "$dir" ] || { echo "layering: $layers lists $dir/, which is not in the tree" >&2; bad=1; }
done <"$tmp/layers"

find engine backends harness reports -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \
     -o -name '*.cpp' -o -name '*.cc' \) | LC_ALL=C sort >"$tmp/files"
# every quoted include as "file<TAB>included name"
while read -r f; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | sed "s|^|$f	|"
done <"$tmp/files" >"$tmp/incs"

# resolve each include as the compiler would, then check the folders' layers (awk: one pass)
awk -F'\t' -v files="$tmp/files" -v layers="$tmp/layers" '
function norm(p,    n, a, i, out, k, st) {  # "a/b/../c" -> "a/c"
    n = split(p, a, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (a[i] == "." || a[i] == "") continue
        if (a[i] == ".." && k > 0 && st[k] != "..") { k--; continue }
        st[++k] = a[i]
    }
    out = ""
    for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") st[i]
    return out
}
function dirof(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
BEGIN {
    while ((getline l < files) > 0) have[l] = 1
    while ((getline l < layers) > 0) { split(l, a, "\t"); layer[a[1]] = a[2]; uses[a[1]] = a[3] }
    for (d in uses) {   # rule 2: what a folder uses is listed, of a lower layer
        if (uses[d] == "-") continue
        if (layer[d] !~ /^[0-9]+$/) {
            print "layering: " d "/ has no layer (\"-\") but uses folders in ci/layers.tsv; its uses must be \"-\"" > "/dev/stderr"
            bad = 1; continue
        }
        n = split(uses[d], u, " ")
        for (i = 1; i <= n; i++) {
            if (!(u[i] in layer) || layer[u[i]] !~ /^[0-9]+$/)
                printf "layering: ci/layers.tsv: %s/ uses %s/, which is not a listed folder with a layer\n", d, u[i] > "/dev/stderr"
            else if (layer[u[i]] + 0 >= layer[d] + 0)
                printf "layering: ci/layers.tsv: %s/ (layer %s) uses %s/ (layer %s): a folder may use only lower layers\n",
                       d, layer[d], u[i], layer[u[i]] > "/dev/stderr"
            else { use[d, u[i]] = 1; continue }
            bad = 1
        }
    }
    for (l in have) {
        d = dirof(l)
        if ((!(d in layer) || layer[d] !~ /^[0-9]+$/) && !(d in said)) {
            print "layering: " d "/ (of " l ") has no layer in ci/layers.tsv" > "/dev/stderr"
            said[d] = 1; bad = 1
        }
    }
}
{
    f = $1; inc = $2; d = dirof(f)
    t = ""
    if (norm(d "/" inc) in have) t = norm(d "/" inc)
    else if (norm(inc) in have) t = norm(inc)
    else if (norm("engine/" inc) in have) t = norm("engine/" inc)
    if (!(d in layer) || layer[d] !~ /^[0-9]+$/) next   # reported in BEGIN
    if (t == "") next                 # a system or generated header
    td = dirof(t)
    if (td == d) next
    if (!(td in layer) || layer[td] !~ /^[0-9]+$/) next   # reported as its own folder
    if (layer[td] + 0 >= layer[d] + 0) {
        printf "layering: %s includes %s: %s/ (layer %s) may include only lower layers, not %s/ (layer %s)\n",
               f, t, d, layer[d], td, layer[td] > "/dev/stderr"
        bad = 1
    } else if (!((d, td) in use)) {
        printf "layering: %s includes %s, but %s/ does not use %s/ (ci/layers.tsv, column 3: add it there, which also links it)\n",
               f, t, d, td > "/dev/stderr"
        bad = 1
    }
    edges++
}
END { printf "layering: %d include edges between folders checked\n", edges; exit bad }' "$tmp/incs" || bad=1

# README's table is the generated one (not in --build)
if [ $readme = 1 ]; then
    print_table >"$tmp/want"
    sed -n '/^<!-- layout:begin/,/^<!-- layout:end/p' README.md | sed '1d;$d' >"$tmp/have"
    if [ ! -s "$tmp/have" ]; then
        echo "layering: README.md has no layout table between <!-- layout:begin and <!-- layout:end" >&2
        bad=1
    elif ! cmp -s "$tmp/want" "$tmp/have"; then
        echo "layering: README.md's layout table is not ci/layers.tsv's (regenerate: ci/layering.sh --table):" >&2
        diff "$tmp/have" "$tmp/want" >&2 || true
        bad=1
    fi
fi
[ $bad = 0 ] && echo "layering: ok"
exit $bad
