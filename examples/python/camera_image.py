#!/usr/bin/env python3
"""Fetches a simulated camera's newest image from a running armsim over the monitor port (stdlib
only) and writes it as a PNG, with its depth (metres) as a 16-bit PNG in millimetres when the
camera has depth. Prints the camera's state: the step it shows, pos, quat_world (w first; +X
forward, +Z up) and intrinsics.

    cargo run --release -- --headless --cameras &           # or the window: cargo run --release
    python3 examples/python/camera_image.py front           # -> front.png
    python3 examples/python/camera_image.py --list          # every camera's state

Wire format (see README, "Camera images"): `(getCameras)` and `(getCamera NAME)`; the reply to the
latter carries `(rgb BASE64)` (RGB8, rows top first) and `(depth BASE64)` (little-endian f32)
or `(noimage "why")` / `(nodepth "why")`.
"""

import argparse
import base64
import re
import socket
import struct
import sys
import zlib


def send(sock, text):
    data = text.encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock):
    def exact(n):
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("armsim closed the connection")
            buf += chunk
        return bytes(buf)

    return exact(struct.unpack(">I", exact(4))[0]).decode()


def field(text, name):
    """The atoms of the first `(name ...)` in text (quoted atoms as one string)."""
    m = re.search(r"\(" + name + r" ((?:[^()\"]|\"(?:[^\"\\]|\\.)*\")*)\)", text)
    if m is None:
        return None
    return [a.strip('"') for a in re.findall(r"\"(?:[^\"\\]|\\.)*\"|[^\s]+", m.group(1))]


def reply(sock, prefixes):
    """The next message starting with one of `prefixes` (the world frames streamed every cycle are
    skipped)."""
    while True:
        text = recv(sock)
        if text.startswith("(error"):
            sys.exit("armsim: " + " ".join(field(text, "error") or [text]))
        if text.startswith(prefixes):
            return text


def png(path, width, height, rows, bit_depth, colour_type):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("camera", nargs="?", default="front", help="camera name (default: front)")
    ap.add_argument("--address", default="127.0.0.1:60001", help="armsim's monitor port")
    ap.add_argument("--out", help="PNG to write (default: CAMERA.png)")
    ap.add_argument("--list", action="store_true", help="print every camera's state and exit")
    args = ap.parse_args()
    host, port = args.address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    if args.list:
        send(sock, "(getCameras)")
        print(reply(sock, ("(cameras",)))
        return
    send(sock, f"(getCamera {args.camera})")
    text = reply(sock, ("(camera",))
    w, h = map(int, field(text, "size"))
    print(f"camera {args.camera}: {w}x{h}, step {field(text, 'step')[0]}, sim time {field(text, 'time')[0]} s")
    print("  pos", field(text, "pos"), "quat_world", field(text, "quat"))
    print("  intrinsics", field(text, "intrinsics"))
    if (why := field(text, "noimage")) is not None:
        sys.exit("no image: " + " ".join(why))
    rgb = base64.b64decode(field(text, "rgb")[0])
    out = args.out or f"{args.camera}.png"
    png(out, w, h, [rgb[y * w * 3:(y + 1) * w * 3] for y in range(h)], 8, 2)
    print("  wrote", out)
    depth = field(text, "depth")
    if depth is not None:
        metres = struct.unpack(f"<{w * h}f", base64.b64decode(depth[0]))
        mm = [min(65535, int(d * 1000)) if d == d and d != float("inf") else 0 for d in metres]
        rows = [struct.pack(f">{w}H", *mm[y * w:(y + 1) * w]) for y in range(h)]
        dpath = out[:-4] + "_depth_mm.png" if out.endswith(".png") else out + "_depth_mm.png"
        png(dpath, w, h, rows, 16, 0)
        print("  wrote", dpath, "(depth in millimetres; 0 = nothing hit)")


if __name__ == "__main__":
    main()
