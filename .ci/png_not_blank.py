#!/usr/bin/env python3
"""Fails unless the PNG exists, decodes, is at least MIN_W x MIN_H (default 640x400, the window) and
is not blank (a real window shows many distinct colours). Standard library only.
Usage: png_not_blank.py PATH [MIN_W MIN_H]"""
import struct
import sys
import zlib

path = sys.argv[1]
min_w, min_h = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (640, 400)
with open(path, "rb") as f:
    data = f.read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"{path}: not a PNG")
pos, idat, width, height, ctype = 8, b"", 0, 0, 0
while pos < len(data):
    (n,) = struct.unpack(">I", data[pos:pos + 4])
    kind = data[pos + 4:pos + 8]
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width, height, _depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
if width < min_w or height < min_h:
    sys.exit(f"{path}: {width}x{height} is smaller than {min_w}x{min_h}")
# sample the filtered scanlines: distinct byte values over the image say it is not one flat colour
distinct = len(set(raw[:: max(1, len(raw) // 200000)]))
if distinct < 32:
    sys.exit(f"{path}: looks blank ({distinct} distinct byte values)")
print(f"{path}: {width}x{height}, {distinct} distinct byte values: not blank")
