#!/usr/bin/env python3
"""An RCSSServerMJ-style monitor (stdlib only): prints the world the server streams every cycle, and sends
the commands given on the command line first.

    cargo run --release &                                # monitor port 60001
    python3 examples/python/monitor.py --start           # start the session, then watch
    python3 examples/python/monitor.py "(kickOff)" "(cube (n cube_red)(pos 0.45 0.3 1.1))"
    python3 examples/python/monitor.py "(step 24)" --count 3

Commands: (start) (pause) (step <n>) (reset) (kickOff [Left|Right]) (playMode <mode>)
(cube (n <name>)(pos x y z)[(quat w x y z)][(vel vx vy vz)]) (killsim).
"""

import argparse
import socket
import struct


def send(sock, text):
    data = text.encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock):
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    header = exact(4)
    if header is None:
        return None
    body = exact(struct.unpack(">I", header)[0])
    return None if body is None else body.decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("commands", nargs="*", help="S-expression commands to send first")
    ap.add_argument("--address", default="127.0.0.1:60001")
    ap.add_argument("--start", action="store_true", help="send (start) first")
    ap.add_argument("--count", type=int, default=0, help="stop after this many world frames (0 = never)")
    args = ap.parse_args()
    host, port = args.address.split(":")
    sock = socket.create_connection((host, int(port)))
    for cmd in (["(start)"] if args.start else []) + args.commands:
        send(sock, cmd)
    frames = 0
    while True:
        text = recv(sock)
        if text is None:
            print("server closed the connection")
            return
        if text.startswith("(ok") or text.startswith("(error"):
            print(text)
            continue
        frames += 1
        # Print one line per second of frames (60 per second at the default cycle).
        if frames % 60 == 1 or "(referee" in text:
            print(text[:300] + ("..." if len(text) > 300 else ""))
        if args.count and frames >= args.count:
            return


if __name__ == "__main__":
    main()
