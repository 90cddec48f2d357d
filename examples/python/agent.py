#!/usr/bin/env python3
"""An RCSSServerMJ-style agent (stdlib only): takes control of the arm with (init arm6 teamA 1) and, in sync
mode, answers every perception with PD effectors that swing the shoulder and elbow on a slow sine.

    cargo run --release -- --headless --sync &          # agent port 60000, monitor port 60001
    python3 examples/python/agent.py [host:port] [cycles]

Taking the arm starts the session (as with rcssservermj), so no monitor or panel Start is needed.

Joint angles in perceptions and effectors are degrees; kp is N*m/rad, kd N*m*s/rad, tau N*m:
torque = kp*(q - q_measured) + kd*(dq - dq_measured) + tau.
"""

import math
import socket
import struct
import sys
import time


def send(sock, text):
    data = text.encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def recv(sock):
    header = read_exact(sock, 4)
    if header is None:
        return None
    (n,) = struct.unpack(">I", header)
    body = read_exact(sock, n)
    return None if body is None else body.decode()


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def parse(text):
    """A small S-expression reader: nested lists of atoms."""
    stack, cur, atom = [], [], ""
    for ch in text:
        if ch in "() \t\n":
            if atom:
                cur.append(atom)
                atom = ""
            if ch == "(":
                stack.append(cur)
                cur = []
            elif ch == ")":
                done, cur = cur, stack.pop()
                cur.append(done)
        else:
            atom += ch
    return cur


def joints(msg):
    """{joint: (deg, deg/s)} from the (HJ (n j)(ax a)(vx v)) entries."""
    out = {}
    for e in msg:
        if isinstance(e, list) and e and e[0] == "HJ":
            fields = {f[0]: f[1] for f in e[1:]}
            out[fields["n"]] = (float(fields["ax"]), float(fields["vx"]))
    return out


def main():
    host, port = (sys.argv[1].split(":") if len(sys.argv) > 1 else ("127.0.0.1", "60000"))
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    send(sock, "(init arm6 teamA 1)")
    start = time.time()
    for cycle in range(cycles):
        text = recv(sock)
        if text is None:
            print("server closed the connection")
            return
        msg = parse(text)
        for e in msg:
            if isinstance(e, list) and e and e[0] in ("error", "referee"):
                print(text if e[0] == "error" else e)
        now = next(float(e[1][1]) for e in msg if isinstance(e, list) and e[0] == "time")
        q = joints(msg)
        if cycle % 60 == 0:
            print(f"t={now:7.2f}s shoulder_pan={q['shoulder_pan'][0]:7.2f} "
                  f"shoulder_lift={q['shoulder_lift'][0]:7.2f} elbow={q['elbow'][0]:7.2f}")
        s = math.sin(now)
        # One message per cycle with every effector (sync mode counts messages).
        send(sock, f"(shoulder_pan {30 * s:.2f} 0 80 4 0)"
                   f"(shoulder_lift {31 + 10 * s:.2f} 0 400 20 0)"
                   f"(elbow {54 - 10 * s:.2f} 0 300 15 0)"
                   f"(gripper {1 if s > 0 else 0})")
    took = time.time() - start
    print(f"{cycles} cycles in {took:.2f} s: {cycles / took:.0f} cycles/s")


if __name__ == "__main__":
    main()
