#!/usr/bin/env python3
"""A TeleSpace revA teleoperation client: connect, start, move the end effector through a few points
while heartbeating, print what the server says, then disconnect.

Needs the `websockets` package (pip install websockets, version 12 or newer for the sync client).

    cargo run --release &            # teleop on ws://127.0.0.1:8765/ws (the scene's networking)
    python3 examples/python/teleop_client.py ws://127.0.0.1:8765/ws
"""

import json
import sys
import time

from websockets.sync.client import connect

URL = sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8765/ws"


class Session:
    def __init__(self, ws):
        self.ws = ws
        self.seq = 0
        self.session_id = ""
        self.state = None

    def send(self, msg_type, payload):
        self.seq += 1
        self.ws.send(json.dumps({
            "schema_version": "1.0.0-revA", "msg_type": msg_type, "seq": self.seq,
            "t_send_ms": int(time.time() * 1000), "session_id": self.session_id,
            "payload": payload, "extensions": {},
        }))

    def drain(self, timeout=0.0):
        """Reads what has arrived; returns the sim_events."""
        events = []
        while True:
            try:
                msg = json.loads(self.ws.recv(timeout=timeout))
            except TimeoutError:
                return events
            timeout = 0.0
            kind, p = msg["msg_type"], msg["payload"]
            if kind == "state_frame":
                self.state = p
            elif kind == "heartbeat_ack":
                rtt = time.time() * 1000 - p["t_origin_ms"]
                print(f"heartbeat round trip {rtt:.1f} ms (server estimate {p['rtt_ms_est']:.2f} ms)")
            elif kind == "sim_event":
                if p["event"] == "ALERT":
                    a = p["extensions"]["alert"]
                    print(f"alert {a['code']}: {a['message']}")
                else:
                    print(f"event {p['event']} (sim {p['sim_state']})")
                events.append(msg)

    def wait(self, event):
        deadline = time.time() + 5
        while time.time() < deadline:
            for e in self.drain(timeout=0.1):
                if e["payload"]["event"] == event:
                    return e
        raise SystemExit(f"no {event} from the server within 5 s")

    def move(self, target, grip=0, secs=2.0, sim_secs=None, timeout=60.0):
        """Streams control frames holding the hand at `target` (and heartbeats) for `secs` of
        wall time, as a person would; or, with `sim_secs`, until the state frames show that
        much sim time gone by since the move began, however fast the server runs (what a test
        that needs so much motion recorded waits for), failing after `timeout` wall seconds."""
        end = time.time() + (secs if sim_secs is None else timeout)
        # Counted from the first state frame that arrives during the move (the one drained
        # before it may be old), as (episode, sim time): a reset restarts the sim time at 0.
        stale, since = self.state, None
        last_hb = 0.0
        while time.time() < end:
            self.send("control_frame", {
                "frame_id": "vp_operator_anchor", "left_target_pos_m": target,
                "left_grip": {"mode": "binary", "value": grip}, "clutch_enabled": True,
                "alerts": [],
            })
            if time.time() - last_hb > 1.0:
                last_hb = time.time()
                self.send("heartbeat", {"t_origin_ms": int(time.time() * 1000)})
            self.drain(timeout=1 / 60)
            if sim_secs is None or self.state is None or self.state is stale:
                continue
            ext = self.state["extensions"]
            if since is None or ext["episode"] != since[0]:
                since = (ext["episode"], ext["sim_time_s"])
            elif ext["sim_time_s"] - since[1] >= sim_secs:
                break
        else:
            if sim_secs is not None:
                raise TimeoutError(f"under {sim_secs} s of sim time in {timeout} s of moving to {target}")
        ee = self.state["ee_pos_m"] if self.state else None
        print(f"target {target} -> end effector {[round(v, 3) for v in ee]}"
              f" alerts {self.state['alerts'] if self.state else []}")


def main():
    with connect(URL) as ws:
        s = Session(ws)
        s.send("ui_cmd", {"command": "CONNECT", "requested_scene_config_id": "default_scene"})
        hello = s.wait("CONNECTED")
        s.session_id = hello["session_id"]
        print(f"session {s.session_id} as {hello['payload']['extensions']['role']}")
        s.send("ui_cmd", {"command": "START"})
        s.wait("STARTED")
        for target in ([0.5, 0.1, 1.2], [0.4, -0.2, 1.15], [0.5, 0.9, 1.2], [0.55, 0.0, 1.0]):
            s.move(target)
        s.send("ui_cmd", {"command": "DISCONNECT"})
        s.wait("DISCONNECTED")


if __name__ == "__main__":
    main()
