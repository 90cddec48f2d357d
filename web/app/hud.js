// The HUD: one status summary (session state, role, round trip, alerts, play mode, score) that
// the desktop view shows as text and the headset view draws onto a canvas texture, with Start /
// Pause / Reset buttons the controller ray can press.

import * as THREE from '../vendor/three.module.js';

/** The HUD's lines, from the client (protocol.js) and its latest state frame. */
export function hudLines(client) {
  const frame = client.state;
  const referee = frame?.extensions?.referee;
  const rtt = client.rttMs ?? frame?.stats?.rtt_ms_est;
  const lat = client.latency.summary();
  return {
    state: `${client.simState ?? '—'} · ${client.role ?? 'no session'} · ${client.connection}`,
    rtt: `RTT ${rtt == null ? '—' : `${Math.round(rtt)} ms`} · control→state p50 ${
      lat.p50_ms == null ? '—' : `${Math.round(lat.p50_ms)} ms`}`,
    play: referee ? `${referee.play_mode} · score ${referee.score} · ${referee.play_time_s.toFixed(1)} s` : 'no referee',
    alerts: client.activeAlerts(),
  };
}

export const BUTTONS = ['START', 'PAUSE', 'RESET'];

/** A panel in the headset view: a canvas texture on a plane, 0.5 m x 0.3 m. */
export class XrHud {
  constructor() {
    this.canvas = document.createElement('canvas');
    this.canvas.width = 1000;
    this.canvas.height = 600;
    this.texture = new THREE.CanvasTexture(this.canvas);
    this.texture.colorSpace = THREE.SRGBColorSpace;
    this.mesh = new THREE.Mesh(
      new THREE.PlaneGeometry(0.5, 0.3),
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
    c.fillRect(0, 0, 1000, 600);
    c.fillStyle = '#fff';
    c.font = 'bold 44px sans-serif';
    c.fillText(lines.state, 30, 70);
    c.font = '36px sans-serif';
    c.fillText(lines.rtt, 30, 130);
    c.fillText(lines.play, 30, 185);
    c.fillStyle = '#ffb74d';
    lines.alerts.slice(0, 4).forEach((a, i) => c.fillText(String(a).slice(0, 52), 30, 245 + i * 48));
    BUTTONS.forEach((b, i) => {
      c.fillStyle = ['#2e7d32', '#f9a825', '#c62828'][i];
      c.fillRect(30 + i * 320, 460, 290, 110);
      c.fillStyle = '#fff';
      c.font = 'bold 48px sans-serif';
      c.fillText(b, 80 + i * 320, 532);
    });
    this.texture.needsUpdate = true;
  }

  /** The button under a ray hit's UV coordinates, if any. */
  buttonAt(uv) {
    const x = uv.x * 1000;
    const y = (1 - uv.y) * 600;
    if (y < 460 || y > 570) return null;
    const i = Math.floor((x - 30) / 320);
    return i >= 0 && i < 3 && (x - 30) % 320 < 290 ? BUTTONS[i] : null;
  }
}
