#!/usr/bin/env python3
"""What a screenshot shows, without an imaging library: its size, and how many of its pixels
have each given colour.

    png_colours.py FILE.png RRGGBB...

Prints `WIDTHxHEIGHT` and then `RRGGBB COUNT` per colour. Reads the 8-bit RGB or RGBA,
non-interlaced PNG that Chromium writes.
"""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG {header}"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = pixels(sys.argv[1])
    print(f"{width}x{height}")
    wanted = {bytes.fromhex(c): c for c in sys.argv[2:]}
    counts = dict.fromkeys(wanted.values(), 0)
    for row in rows:
        for x in range(0, len(row), channels):
            colour = wanted.get(row[x:x + 3])
            if colour:
                counts[colour] += 1
    for colour, count in counts.items():
        print(f"{colour} {count}")


if __name__ == "__main__":
    main()
