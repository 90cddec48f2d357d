// revA on the page's side: envelopes, the session (CONNECT, role, START / PAUSE /
// RESET, alerts), armsim's role requests (`extensions.role` on CONNECT and START,
// `REQUEST_CONTROL` / `RELEASE_CONTROL`), heartbeats per the scene's settings, control frames
// paced to at most 90 Hz,
// and the latency from a control frame to the first state frame that reflects it
// (`extensions.last_control_seq`). No DOM here: the WebSocket class and the clock come in, so
// node's test runner drives it with a fake socket.

export const SCHEMA = '1.0.0-revA';
export const MAX_CONTROL_HZ = 90;

/** One revA envelope as JSON text. */
export function envelope(msgType, seq, sessionId, payload, nowMs) {
  return JSON.stringify({
    schema_version: SCHEMA,
    msg_type: msgType,
    seq,
    t_send_ms: Math.round(nowMs),
    session_id: sessionId ?? '',
    payload,
    extensions: {},
  });
}

/** `control_frame.payload`; the target is in the anchor frame (see mapping.js). */
export function controlPayload({ target, grip, clutch }) {
  if (!target || target.length !== 3 || !target.every(Number.isFinite)) {
    throw new Error('a control frame needs a finite target');
  }
  return {
    frame_id: 'vp_operator_anchor',
    left_target_pos_m: target.map((v) => Math.round(v * 1e5) / 1e5),
    left_grip: { mode: 'binary', value: grip ? 1 : 0 },
    clutch_enabled: !!clutch,
    alerts: [],
    extensions: {},
  };
}

/**
 * Lets frames through at most `maxHz` times a second on average (a 120 Hz display sends 90 of
 * its 120 frames), every frame of a display at or under `maxHz` (jitter tolerated: a frame may
 * come a tenth of a period early, and the schedule never runs more than one period behind).
 */
export class Pacer {
  constructor(maxHz = MAX_CONTROL_HZ) {
    this.gap = 1000 / maxHz;
    this.next = -Infinity;
  }

  ready(nowMs) {
    if (nowMs < this.next - this.gap * 0.1) return false;
    this.next = Math.max(this.next, nowMs - this.gap) + this.gap;
    return true;
  }
}

/** Percentile of a sorted-on-demand sample list (nearest rank). */
export function percentile(values, p) {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/**
 * Control frame -> state frame latency: `sent(seq, t)` for each control frame, `state(lastSeq,
 * t)` for each state frame; a sample is taken the first time a state frame carries a seq.
 */
export class Latency {
  constructor(keep = 2000) {
    this.keep = keep;
    this.pending = new Map();
    this.samples = [];
    this.seen = 0;
    this.sentTimes = [];
  }

  sent(seq, nowMs) {
    this.pending.set(seq, nowMs);
    this.sentTimes.push(nowMs);
    if (this.sentTimes.length > this.keep) this.sentTimes.shift();
    if (this.pending.size > 1000) this.pending.delete(this.pending.keys().next().value);
  }

  state(lastControlSeq, nowMs) {
    if (!lastControlSeq || lastControlSeq <= this.seen) return;
    this.seen = lastControlSeq;
    const t = this.pending.get(lastControlSeq);
    for (const seq of this.pending.keys()) if (seq <= lastControlSeq) this.pending.delete(seq);
    if (t === undefined) return;
    this.samples.push(nowMs - t);
    if (this.samples.length > this.keep) this.samples.shift();
  }

  /** `{ n, p50_ms, p99_ms, control_hz }` over what was kept. */
  summary() {
    const s = this.sentTimes;
    const span = s.length > 1 ? (s[s.length - 1] - s[0]) / 1000 : 0;
    return {
      n: this.samples.length,
      p50_ms: percentile(this.samples, 50),
      p99_ms: percentile(this.samples, 99),
      control_hz: span > 0 ? (s.length - 1) / span : null,
    };
  }
}

/**
 * One revA session over a WebSocket: CONNECT on open, the role from CONNECTED and the role
 * alerts (PROMOTED, DEMOTED, REVOKED, CONTROL_TAKEN / _BUSY / _RELEASED), the latest state
 * frame, alerts, heartbeats every `period_ms`, and control frames. `role` is what CONNECT asks
 * for (`extensions.role`: 'observer' watches without holding the arm, 'controller' takes it if
 * it is free; null asks nothing, and armsim gives the arm to the first session);
 * `requestControl()` and `start()` ask for the arm later, and a reconnect asks for the role
 * asked for last. `onChange` is called after anything a HUD shows changed.
 */
export class TeleopClient {
  constructor({
    url, sceneId, heartbeat, WebSocketImpl, now = () => Date.now(), onChange = () => {},
    reconnectMs = 0, setTimer = (f, ms) => setTimeout(f, ms), role = null,
  }) {
    this.askRole = role;
    this.reconnectMs = reconnectMs;
    this.setTimer = setTimer;
    this.url = url;
    this.sceneId = sceneId;
    this.periodMs = heartbeat?.period_ms ?? 1000;
    this.WebSocketImpl = WebSocketImpl;
    this.now = now;
    this.onChange = onChange;
    this.seq = 0;
    this.sessionId = '';
    this.role = null;
    this.connection = 'connecting';
    this.simState = null;
    /** The simulation's own state (the state frames' `extensions.global_sim_state`). */
    this.globalState = null;
    /** Who holds the arm (`extensions.arm_holder`): a description, null if nobody, undefined if not known. */
    this.armHolder = undefined;
    this.state = null;
    this.alerts = new Map();
    this.lastEvent = null;
    this.rttMs = null;
    this.lastHeartbeat = -Infinity;
    this.pacer = new Pacer();
    this.latency = new Latency();
    this.socket = null;
  }

  open() {
    const ws = new this.WebSocketImpl(this.url);
    this.socket = ws;
    ws.onopen = () => {
      this.connection = 'open';
      this.send('ui_cmd', {
        command: 'CONNECT',
        requested_scene_config_id: this.sceneId,
        extensions: this.askRole ? { role: this.askRole } : {},
      });
      this.onChange();
    };
    ws.onmessage = (m) => this.receive(typeof m.data === 'string' ? m.data : '');
    ws.onclose = (e) => {
      if (this.socket !== ws) return;
      this.connection = `closed${e?.reason ? `: ${e.reason}` : ''}`;
      this.sessionId = '';
      this.role = null;
      this.armHolder = undefined;
      // armsim restarted or the network dropped: try again, as a new session.
      if (this.reconnectMs > 0) {
        this.connection += ', reconnecting';
        this.setTimer(() => this.open(), this.reconnectMs);
      }
      this.onChange();
    };
    ws.onerror = () => {
      this.connection = 'error';
      this.onChange();
    };
  }

  send(msgType, payload) {
    if (!this.socket || this.socket.readyState !== 1) return false;
    this.seq += 1;
    this.socket.send(envelope(msgType, this.seq, this.sessionId, payload, this.now()));
    return true;
  }

  command(command, extensions = {}) {
    return this.send('ui_cmd', { command, extensions });
  }

  /** Asks for the arm (armsim's `REQUEST_CONTROL`), unless this session has it already. */
  requestControl() {
    this.askRole = 'controller';
    if (!this.sessionId || this.role === 'controller') return false;
    return this.command('REQUEST_CONTROL');
  }

  /** Gives the arm up and only watches (`RELEASE_CONTROL`). */
  releaseControl() {
    this.askRole = 'observer';
    if (!this.sessionId) return false;
    return this.command('RELEASE_CONTROL');
  }

  /** START; an observer asks for the arm in the same message (`extensions.role`). */
  start() {
    if (this.role === 'controller') return this.command('START');
    this.askRole = 'controller';
    return this.command('START', { role: 'controller' });
  }

  /** Who holds the arm, for the HUD: 'you', 'another client', 'nobody', or null (not known yet). */
  holder() {
    if (!this.sessionId) return null;
    if (this.role === 'controller') return 'you';
    if (this.armHolder === undefined) return null;
    return this.armHolder ? 'another client' : 'nobody';
  }

  /** Heartbeat when one is due; call every frame (or from a timer). */
  tick() {
    const t = this.now();
    if (this.sessionId && t - this.lastHeartbeat >= this.periodMs) {
      this.lastHeartbeat = t;
      this.send('heartbeat', { t_origin_ms: Math.round(t), extensions: {} });
    }
  }

  /**
   * A control frame, if this session controls the arm, sees RUNNING (its own START sent: the
   * server refuses frames otherwise) and the pacer lets it through.
   */
  control({ target, grip, clutch }) {
    if (!this.sessionId || this.role !== 'controller' || this.simState !== 'RUNNING' || !target) return false;
    const t = this.now();
    if (!this.pacer.ready(t)) return false;
    if (!this.send('control_frame', controlPayload({ target, grip, clutch }))) return false;
    if (clutch) this.latency.sent(this.seq, t);
    return true;
  }

  receive(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    const p = msg?.payload ?? {};
    const ext = p.extensions ?? {};
    switch (msg?.msg_type) {
      case 'state_frame':
        this.state = p;
        this.simState = p.sim_state;
        this.globalState = ext.global_sim_state ?? null;
        if ('arm_holder' in ext) this.armHolder = ext.arm_holder;
        this.latency.state(ext.last_control_seq, this.now());
        this.alerts.set('frame', p.alerts ?? []);
        break;
      case 'sim_event':
        this.lastEvent = p.event;
        if (p.sim_state) this.simState = p.sim_state;
        if (ext.role) this.role = ext.role;
        if (p.event === 'CONNECTED') {
          this.sessionId = p.session_id || msg.session_id;
          this.lastHeartbeat = -Infinity;
        } else if (p.event === 'DISCONNECTED') {
          this.sessionId = '';
          this.role = null;
        }
        if (p.event === 'ALERT' && ext.alert) {
          this.alerts.set('event', [{ ...ext.alert, at: this.now() }]);
        }
        break;
      case 'heartbeat_ack':
        this.rttMs = Math.max(0, this.now() - p.t_origin_ms);
        break;
      default:
        return;
    }
    this.onChange();
  }

  /** The alert codes to show: the frame's own, plus the latest event alert for 5 s. */
  activeAlerts() {
    const codes = [...(this.alerts.get('frame') ?? [])];
    for (const a of this.alerts.get('event') ?? []) {
      if (this.now() - a.at < 5000) codes.push(`${a.code}: ${a.message}`);
    }
    return codes;
  }
}
