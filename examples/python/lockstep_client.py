#!/usr/bin/env python3
"""A remote-control lockstep client (the gripper project's protocol; stdlib only).

Like that project's example controller, it answers sin(step/10) for every joint.

Start the simulator with the gripper project's robot (gripper4) and a lockstep port, then run this:

    cargo run --release -- --scene assets/scenes/gripper4.json --remote-control-port 11235
    python3 examples/python/lockstep_client.py --port 11235 --steps 2000

Each step the server sends a u64 big-endian step counter and N big-endian f32 joint angles
(N = 10 for gripper4: 48 bytes); the client answers N big-endian f32 target joint velocities
(40 bytes) and the simulator takes exactly one step.
"""
import argparse
import math
import socket
import struct
import time


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("server closed the connection")
        buf.extend(chunk)
    return bytes(buf)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11235)
    parser.add_argument("--joints", type=int, default=10, help="N: the robot's joint count")
    parser.add_argument("--steps", type=int, default=1000, help="stop after this many steps")
    parser.add_argument("--quiet", action="store_true", help="do not print every frame")
    args = parser.parse_args()

    n = args.joints
    state = struct.Struct(">Q%df" % n)
    answer = struct.Struct(">%df" % n)
    with socket.create_connection((args.host, args.port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.perf_counter()
        for _ in range(args.steps):
            step, *angles = state.unpack(recv_exact(sock, state.size))
            if not args.quiet:
                print(step, " ".join("%+.3f" % a for a in angles))
            v = math.sin(step / 10.0)
            sock.sendall(answer.pack(*([v] * n)))
        elapsed = time.perf_counter() - start
    print("%d steps in %.2f s: %.0f steps/s" % (args.steps, elapsed, args.steps / elapsed))


if __name__ == "__main__":
    main()
