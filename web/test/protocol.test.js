// Envelopes, the session over a fake WebSocket, heartbeats, pacing and latency figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Latency, Pacer, TeleopClient, controlPayload, envelope, percentile } from '../app/protocol.js';

test('envelopes carry every revA field', () => {
  const e = JSON.parse(envelope('heartbeat', 7, 'abc', { t_origin_ms: 5 }, 1234.4));
  assert.deepEqual(Object.keys(e).sort(),
    ['extensions', 'msg_type', 'payload', 'schema_version', 'seq', 'session_id', 't_send_ms']);
  assert.equal(e.schema_version, '1.0.0-revA');
  assert.equal(e.t_send_ms, 1234);
  const p = controlPayload({ target: [0.1234567, 0, 1], grip: true, clutch: true });
  assert.equal(p.frame_id, 'vp_operator_anchor');
  assert.deepEqual(p.left_grip, { mode: 'binary', value: 1 });
  assert.equal(p.left_target_pos_m[0], 0.12346);
  assert.throws(() => controlPayload({ target: [NaN, 0, 0] }));
});

test('the pacer keeps control frames at or under 90 Hz and passes every frame of a 90 Hz display', () => {
  const sentAt = (hz, jitter = 0) => {
    const pacer = new Pacer(90);
    let sent = 0;
    for (let i = 0; i < hz * 2; i++) {
      const t = (i * 1000) / hz + (i % 2 ? jitter : -jitter);
      if (pacer.ready(t)) sent++;
    }
    return sent / 2;
  };
  for (const hz of [100, 120, 144]) assert.ok(sentAt(hz) <= 91 && sentAt(hz) >= 85, `${hz} Hz: ${sentAt(hz)}`);
  assert.equal(sentAt(90, 0.5), 90, 'a 90 Hz display with jitter');
  assert.equal(sentAt(72), 72);
});

test('latency pairs a control seq with the first state frame carrying it', () => {
  const l = new Latency();
  l.sent(10, 0);
  l.sent(11, 10);
  l.state(10, 25);
  l.state(10, 40);
  l.state(11, 30);
  assert.deepEqual(l.samples, [25, 20]);
  assert.equal(percentile([5, 1, 3, 2, 4], 50), 3);
  assert.equal(percentile([], 50), null);
  assert.equal(l.summary().n, 2);
});

class FakeSocket {
  static last = null;
  constructor(url) {
    this.url = url;
    this.sent = [];
    this.readyState = 1;
    FakeSocket.last = this;
  }
  send(t) { this.sent.push(JSON.parse(t)); }
}

test('a session: CONNECT, role, heartbeats at the scene period, control only as controller', () => {
  let now = 1000;
  const c = new TeleopClient({
    url: 'wss://x/ws?key=k', sceneId: 'default_scene', heartbeat: { period_ms: 500 },
    WebSocketImpl: FakeSocket, now: () => now,
  });
  c.open();
  const ws = FakeSocket.last;
  ws.onopen();
  assert.equal(ws.sent[0].payload.command, 'CONNECT');
  assert.equal(ws.sent[0].payload.requested_scene_config_id, 'default_scene');
  // No session yet: no heartbeat, no control.
  c.tick();
  assert.equal(c.control({ target: [0, 0, 1], grip: false, clutch: true }), false);
  ws.onmessage({ data: JSON.stringify({ msg_type: 'sim_event', session_id: 's1', payload: {
    event: 'CONNECTED', sim_state: 'IDLE', session_id: 's1', extensions: { role: 'observer' } } }) });
  assert.equal(c.sessionId, 's1');
  assert.equal(c.role, 'observer');
  c.tick();
  assert.equal(ws.sent.at(-1).msg_type, 'heartbeat');
  assert.equal(ws.sent.at(-1).session_id, 's1');
  now += 100;
  c.tick();
  assert.equal(ws.sent.filter((m) => m.msg_type === 'heartbeat').length, 1, 'not before the period');
  now += 400;
  c.tick();
  assert.equal(ws.sent.filter((m) => m.msg_type === 'heartbeat').length, 2);
  assert.equal(c.control({ target: [0, 0, 1], grip: false, clutch: true }), false, 'observer');
  ws.onmessage({ data: JSON.stringify({ msg_type: 'sim_event', payload: {
    event: 'ALERT', sim_state: 'IDLE', extensions: { role: 'controller', alert: { code: 'PROMOTED', message: 'you control' } } } }) });
  assert.equal(c.role, 'controller');
  assert.ok(c.activeAlerts().some((a) => a.startsWith('PROMOTED')));
  assert.equal(c.control({ target: [0, 0, 1], grip: true, clutch: true }), false, 'not started');
  ws.onmessage({ data: JSON.stringify({ msg_type: 'sim_event', payload: {
    event: 'STARTED', sim_state: 'RUNNING', extensions: {} } }) });
  assert.equal(c.control({ target: [0, 0, 1], grip: true, clutch: true }), true);
  const frame = ws.sent.at(-1);
  assert.equal(frame.msg_type, 'control_frame');
  ws.onmessage({ data: JSON.stringify({ msg_type: 'state_frame', payload: {
    sim_state: 'RUNNING', alerts: ['WORKSPACE_LIMIT'], extensions: { last_control_seq: frame.seq } } }) });
  assert.equal(c.latency.samples.length, 1);
  assert.deepEqual(c.activeAlerts().slice(0, 1), ['WORKSPACE_LIMIT']);
  ws.onmessage({ data: JSON.stringify({ msg_type: 'heartbeat_ack', payload: { t_origin_ms: now - 12 } }) });
  assert.equal(c.rttMs, 12);
  ws.onmessage({ data: 'not json' });
  c.command('START');
  assert.equal(ws.sent.at(-1).payload.command, 'START');
});

test('a closed socket reconnects as a new session after the delay', () => {
  const timers = [];
  const c = new TeleopClient({
    url: 'wss://x/ws', sceneId: 's', WebSocketImpl: FakeSocket, reconnectMs: 2000,
    setTimer: (f, ms) => timers.push([f, ms]),
  });
  c.open();
  const first = FakeSocket.last;
  first.onopen();
  first.onmessage({ data: JSON.stringify({ msg_type: 'sim_event', payload: {
    event: 'CONNECTED', sim_state: 'IDLE', session_id: 'a', extensions: { role: 'controller' } } }) });
  first.onclose({ reason: 'bye' });
  assert.equal(c.sessionId, '');
  assert.match(c.connection, /reconnecting/);
  assert.equal(timers.length, 1);
  assert.equal(timers[0][1], 2000);
  timers[0][0]();
  assert.notEqual(FakeSocket.last, first);
  FakeSocket.last.onopen();
  assert.equal(FakeSocket.last.sent[0].payload.command, 'CONNECT');
});

test('roles: the page CONNECTs as an observer and asks for the arm when it starts to drive', async () => {
  const { controlLabel, hudLines } = await import('../app/hud.js');
  const c = new TeleopClient({
    url: 'wss://x/ws', sceneId: 's', WebSocketImpl: FakeSocket, role: 'observer', reconnectMs: 1,
    setTimer: (f) => f(),
  });
  c.open();
  const ws = FakeSocket.last;
  ws.onopen();
  assert.deepEqual(ws.sent[0].payload.extensions, { role: 'observer' });
  const event = (payload) => ws.onmessage({ data: JSON.stringify({ msg_type: 'sim_event', payload }) });
  const frame = (extensions) => ws.onmessage({ data: JSON.stringify({ msg_type: 'state_frame', payload: {
    sim_state: 'IDLE', alerts: [], extensions } }) });
  event({ event: 'CONNECTED', sim_state: 'IDLE', session_id: 'a', extensions: { role: 'observer' } });
  assert.equal(c.holder(), null, 'no state frame yet');
  frame({ role: 'observer', arm_holder: null, global_sim_state: 'IDLE' });
  assert.equal(c.holder(), 'nobody');
  assert.equal(controlLabel(c), 'Take control');
  frame({ role: 'observer', arm_holder: 'teleop 10.0.0.5:4000 (session b)', global_sim_state: 'RUNNING' });
  assert.equal(c.holder(), 'another client');
  assert.equal(controlLabel(c), 'Arm held by another client');
  const lines = hudLines(c);
  assert.match(lines.state, /^IDLE \(sim RUNNING\) · observer/);
  assert.match(lines.arm, /another client \(teleop 10\.0\.0\.5/);
  // Asking: REQUEST_CONTROL; the answer's extensions.role is the role now.
  assert.equal(c.requestControl(), true);
  assert.equal(ws.sent.at(-1).payload.command, 'REQUEST_CONTROL');
  event({ event: 'ALERT', sim_state: 'IDLE', extensions: { role: 'observer', alert: { code: 'CONTROL_BUSY', message: 'held' } } });
  assert.equal(c.role, 'observer');
  frame({ role: 'observer', arm_holder: null, global_sim_state: 'RUNNING' });
  // Start as an observer asks for the arm in the same message.
  c.start();
  assert.deepEqual(ws.sent.at(-1).payload, { command: 'START', extensions: { role: 'controller' } });
  event({ event: 'ALERT', sim_state: 'IDLE', extensions: { role: 'controller', alert: { code: 'CONTROL_TAKEN', message: 'yours' } } });
  assert.equal(c.holder(), 'you');
  assert.equal(controlLabel(c), 'Release control');
  assert.equal(c.requestControl(), false, 'already the controller');
  c.start();
  assert.deepEqual(ws.sent.at(-1).payload, { command: 'START', extensions: {} });
  // A reconnect asks for the role asked for last.
  ws.onclose({});
  assert.deepEqual(FakeSocket.last.sent.length, 0);
  FakeSocket.last.onopen();
  assert.deepEqual(FakeSocket.last.sent[0].payload.extensions, { role: 'controller' });
  // Releasing: RELEASE_CONTROL, and a reconnect watches again.
  FakeSocket.last.onmessage({ data: JSON.stringify({ msg_type: 'sim_event', payload: {
    event: 'CONNECTED', sim_state: 'IDLE', session_id: 'c', extensions: { role: 'controller' } } }) });
  c.releaseControl();
  assert.equal(FakeSocket.last.sent.at(-1).payload.command, 'RELEASE_CONTROL');
  // Without a role option CONNECT asks nothing (armsim's default: the first session controls).
  const plain = new TeleopClient({ url: 'ws://x/ws', sceneId: 's', WebSocketImpl: FakeSocket });
  plain.open();
  FakeSocket.last.onopen();
  assert.deepEqual(FakeSocket.last.sent[0].payload.extensions, {});
});

test('the headset panel: its buttons under the controller ray, the control button on its own row', async () => {
  const { XrHud, CONTROL } = await import('../app/hud.js');
  // The panel's canvas is 1000 x 700; uv has its origin at the bottom left.
  const at = (x, y) => XrHud.prototype.buttonAt({ x: x / 1000, y: 1 - y / 700 });
  assert.equal(at(100, 500), 'START');
  assert.equal(at(500, 500), 'PAUSE');
  assert.equal(at(800, 500), 'RESET');
  assert.equal(at(330, 500), null, 'between two buttons');
  assert.equal(at(500, 620), CONTROL);
  assert.equal(at(500, 300), null, 'the alert lines');
});
