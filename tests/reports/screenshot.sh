#!/bin/sh
# screenshot.sh — report.html opened by headless Chromium from a file: URL, with
# no server and no network: the page must load without a script error or a
# failed resource, and its screenshot must not be blank.
#   screenshot.sh REPRO SCRATCH TREE
# Skips (77) when Chromium is not installed (Debian: apt-get install chromium).
# The screenshot stays at SCRATCH/report.png for people to look at.
set -u
repro=$1 scratch=$2 tree=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "SKIP: chromium is not installed"; exit 77; }
[ -d "$tree/a/rep" ] || fail "no tree at $tree (the cli.reports.tree fixture)"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
out=$scratch/out
db=$scratch/history.sqlite
# two runs in the history, so the page has its sparklines too
"$repro" report "$tree/b/rep" --history "$db" --out "$scratch/first" --quiet --no-plots || fail "report b"
"$repro" report "$tree/a/rep" --history "$db" --out "$out" --quiet || fail "repro report: exit $?"
html=$out/report.html
[ -s "$html" ] || fail "no report.html"
case "$html" in /*) ;; *) html=$(pwd)/$html ;; esac
profile=$(mktemp -d "$scratch/profile.XXXXXX") || exit 1
shot=$scratch/report.png
# --virtual-time-budget lets the page's image self-check finish before the capture
timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --screenshot="$shot" --window-size=1280,2000 \
    --enable-logging=stderr --v=0 --virtual-time-budget=10000 "file://$html" \
    >"$scratch/chromium.out" 2>"$scratch/chromium.err"
rc=$?
rm -rf "$profile"
# Chromium's own noise (no D-Bus, no GPU in a container) is not the page's
grep -E 'CONSOLE|Uncaught|Failed to load|net::ERR|repro-report' "$scratch/chromium.err"
[ $rc -eq 0 ] || { tail -20 "$scratch/chromium.err"; fail "chromium: exit $rc"; }
if grep -E 'Uncaught|Failed to load resource|net::ERR_|repro-report: resource failed' "$scratch/chromium.err" >/dev/null; then
    fail "the page logged errors (above)"
fi
[ -s "$shot" ] || fail "no screenshot"
size=$(wc -c <"$shot")
echo "screenshot: $shot ($size bytes)"
# not blank: the PNG's filtered rows of a blank page are almost all zero bytes
if command -v python3 >/dev/null 2>&1; then
    python3 - "$shot" <<'EOF' || fail "the screenshot looks blank"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w, h = 8, b"", 0, 0
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8])
    if t == b"IHDR":
        w, h = struct.unpack(">II", d[pos + 8:pos + 16])
    if t == b"IDAT":
        idat += d[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
nonzero = sum(1 for b in raw[::7] if b) / (len(raw) / 7)
print("screenshot %dx%d, %.1f%% non-zero filtered bytes, %d distinct" % (w, h, 100 * nonzero, len(set(raw[::7]))))
assert w == 1280 and h == 2000, (w, h)
assert nonzero > 0.02 and len(set(raw[::7])) > 32
EOF
else
    [ "$size" -gt 50000 ] || fail "the screenshot is only $size bytes"
fi
echo "ok: screenshot"
