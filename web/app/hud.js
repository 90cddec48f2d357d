// The HUD: one status summary (session state, role, who holds the arm, round trip, alerts, play
// mode, score) that the desktop view shows as text and the headset view draws onto a canvas
// texture, with Start / Pause / Reset buttons and a take / release control button the
// controller ray can press.

import * as THREE from '../vendor/three.module.js';

/** The control button's label: what pressing it does, or why it does nothing. */
export function controlLabel(client) {
  const holder = client.holder();
  if (holder === 'you') return 'Release control';
  return holder === 'another client' ? 'Arm held by another client' : 'Take control';
}

/** The HUD's lines, from the client (protocol.js) and its latest state frame. */
export function hudLines(client) {
  const frame = client.state;
  const referee = frame?.extensions?.referee;
  const rtt = client.rttMs ?? frame?.stats?.rtt_ms_est;
  const lat = client.latency.summary();
  const sim = client.globalState && client.globalState !== client.simState ? ` (sim ${client.globalState})` : '';
  const holder = client.holder();
  return {
    state: `${client.simState ?? '—'}${sim} · ${client.role ?? 'no session'} · ${client.connection}`,
    arm: `arm: ${holder ?? '—'}${holder === 'another client' && client.armHolder ? ` (${client.armHolder})` : ''}`,
    control: controlLabel(client),
    rtt: `RTT ${rtt == null ? '—' : `${Math.round(rtt)} ms`} · control→state p50 ${
      lat.p50_ms == null ? '—' : `${Math.round(lat.p50_ms)} ms`}`,
    play: referee ? `${referee.play_mode} · score ${referee.score} · ${referee.play_time_s.toFixed(1)} s` : 'no referee',
    alerts: client.activeAlerts(),
  };
}

export const BUTTONS = ['START', 'PAUSE', 'RESET'];
/** The second row's one wide button: take or release the arm. */
export const CONTROL = 'CONTROL';

/** A panel in the headset view: a canvas texture on a plane, 0.5 m x 0.35 m. */
export class XrHud {
  constructor() {
    this.canvas = document.createElement('canvas');
    this.canvas.width = 1000;
    this.canvas.height = 700;
    this.texture = new THREE.CanvasTexture(this.canvas);
    this.texture.colorSpace = THREE.SRGBColorSpace;
    this.mesh = new THREE.Mesh(
      new THREE.PlaneGeometry(0.5, 0.35),
      new THREE.MeshBasicMaterial({ map: this.texture, transparent: true }),
    );
    this.mesh.name = 'hud';
    this.last = '';
  }

  draw(lines) {
    const key = JSON.stringify(lines);
    if (key === this.last) return;
    this.last = key;
    const c = this.canvas.getContext('2d');
    c.fillStyle = 'rgba(15, 20, 30, 0.85)';
    c.fillRect(0, 0, 1000, 700);
    c.fillStyle = '#fff';
    c.font = 'bold 40px sans-serif';
    c.fillText(lines.state.slice(0, 46), 30, 60);
    c.font = '34px sans-serif';
    c.fillText(lines.arm.slice(0, 56), 30, 110);
    c.fillText(lines.rtt, 30, 160);
    c.fillText(lines.play, 30, 210);
    c.fillStyle = '#ffb74d';
    lines.alerts.slice(0, 3).forEach((a, i) => c.fillText(String(a).slice(0, 52), 30, 262 + i * 46));
    BUTTONS.forEach((b, i) => {
      c.fillStyle = ['#2e7d32', '#f9a825', '#c62828'][i];
      c.fillRect(30 + i * 320, 440, 290, 110);
      c.fillStyle = '#fff';
      c.font = 'bold 48px sans-serif';
      c.fillText(b, 80 + i * 320, 512);
    });
    c.fillStyle = lines.control.startsWith('Arm held') ? '#555b66' : '#1565c0';
    c.fillRect(30, 570, 930, 110);
    c.fillStyle = '#fff';
    c.font = 'bold 48px sans-serif';
    c.fillText(lines.control.toUpperCase(), 60, 642);
    this.texture.needsUpdate = true;
  }

  /** The button under a ray hit's UV coordinates, if any: a BUTTONS entry or CONTROL. */
  buttonAt(uv) {
    const x = uv.x * 1000;
    const y = (1 - uv.y) * 700;
    if (y >= 570 && y <= 680) return x >= 30 && x <= 960 ? CONTROL : null;
    if (y < 440 || y > 550) return null;
    const i = Math.floor((x - 30) / 320);
    return i >= 0 && i < 3 && (x - 30) % 320 < 290 ? BUTTONS[i] : null;
  }
}
