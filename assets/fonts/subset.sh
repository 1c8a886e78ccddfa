#!/usr/bin/env bash
# Regenerates assets/fonts/NotoSansCJKsc-Regular-subset.otf: Noto Sans CJK SC Regular (Debian's
# fonts-noto-cjk) cut down to the characters the zh-CN interface needs. Re-run it after a
# translation changes (the glyph test in tests/gui.rs says when). Needs root for apt-get (or the package already installed).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
TTC=/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
OUT=assets/fonts/NotoSansCJKsc-Regular-subset.otf
VENV="${VENV:-/tmp/ftvenv}"
CHARS="$(mktemp --suffix=.unicodes)"
trap 'rm -f "$CHARS"' EXIT

# 1. The source font and fontTools.
if [ ! -f "$TTC" ]; then
    apt-get update
    apt-get install -y fonts-noto-cjk
fi
if [ ! -x "$VENV/bin/pyftsubset" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install fonttools
fi

# 2. The face number of "Noto Sans CJK SC" in the collection (2 in 1:20220127+repack1-1).
FACE="$("$VENV/bin/python" - "$TTC" <<'PY'
import sys
from fontTools.ttLib import TTCollection
for i, f in enumerate(TTCollection(sys.argv[1]).fonts):
    if f["name"].getDebugName(4) == "Noto Sans CJK SC":
        print(i)
        break
else:
    sys.exit("no 'Noto Sans CJK SC' face in " + sys.argv[1])
PY
)"

# 3. The character list: every character of the sources (src/**/*.rs: the GUI's zh-CN tables and
#    the core's texts written with text!), the 3,755 level-1 hanzi of
#    GB2312 (0xB0A1..0xD7FE), CJK punctuation U+3000-U+303F, full-width forms U+FF00-U+FFEF,
#    general punctuation U+2000-U+206F and printable ASCII U+0020-U+007E.
"$VENV/bin/python" - "$CHARS" $(find src -name '*.rs' | sort) <<'PY'
import sys
out, srcs = sys.argv[1], sys.argv[2:]
cps = {ord(c) for src in srcs for c in open(src, encoding="utf-8").read() if ord(c) >= 0x20}
level1 = set()
for hi in range(0xB0, 0xD8):
    for lo in range(0xA1, 0xFF):
        try:
            level1.add(ord(bytes([hi, lo]).decode("gb2312")))
        except UnicodeDecodeError:
            pass  # undefined cells (row 0xD7 ends at 0xF9)
assert len(level1) == 3755, len(level1)
cps |= level1
for lo, hi in [(0x3000, 0x303F), (0xFF00, 0xFFEF), (0x2000, 0x206F), (0x0020, 0x007E)]:
    cps |= set(range(lo, hi + 1))
with open(out, "w") as f:
    f.write("\n".join(f"U+{c:04X}" for c in sorted(cps)) + "\n")
print(f"{len(cps)} code points", file=sys.stderr)
PY

# 4. The subset (code points the font lacks are skipped). egui draws without OpenType shaping,
#    but all layout features are kept so other renderers see the usual font.
"$VENV/bin/pyftsubset" "$TTC" \
    --font-number="$FACE" \
    --unicodes-file="$CHARS" \
    --layout-features='*' \
    --no-hinting \
    --name-IDs='*' --name-languages='*' \
    --output-file="$OUT"
ls -l "$OUT"
