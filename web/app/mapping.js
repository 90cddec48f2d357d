// Where a hand goes in the simulation: pure functions and one small state machine (the clutch),
// with no browser and no three.js, so node's test runner checks them.
//
// Frames:
// - XR: the WebXR `local-floor` reference space at session start (metres, Y up, -Z forward).
// - anchor: revA's `vp_operator_anchor`, the frame control frames carry. The page defines it as
//   the same floor origin with robotics axes: X forward, Y left, Z up. With the default scene's
//   identity `t_sim_from_vp_anchor`, the operator stands at the sim origin (the robot's base)
//   looking along +X, over the table.
// - sim: the simulator's world frame (Z up), `sim = T * anchor` with the scene's 4x4 T.

/** The 3x3 rotation from XR axes to anchor axes, row-major. */
export const ANCHOR_FROM_XR = [
  [0, 0, -1],
  [-1, 0, 0],
  [0, 1, 0],
];

/** Largest hand motion in one frame that is still a hand and not a tracking glitch (m). */
export const JUMP_LIMIT_M = 0.06;

export function xrToAnchor([x, y, z]) {
  return [-z, -x, y];
}

export function anchorToXr([x, y, z]) {
  return [-y, z, -x];
}

/** A row-major 4x4 from the scene's nested rows (checks the shape and finiteness). */
export function mat4(rows) {
  if (!Array.isArray(rows) || rows.length !== 4) throw new Error('a 4x4 matrix needs 4 rows');
  const m = rows.map((r) => {
    if (!Array.isArray(r) || r.length !== 4 || !r.every(Number.isFinite)) {
      throw new Error('each matrix row needs 4 finite numbers');
    }
    return r.slice();
  });
  return m;
}

export function mul4(a, b) {
  const out = [];
  for (let i = 0; i < 4; i++) {
    out.push([0, 1, 2, 3].map((j) => a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j] + a[i][3] * b[3][j]));
  }
  return out;
}

export function transformPoint(m, [x, y, z]) {
  return [0, 1, 2].map((i) => m[i][0] * x + m[i][1] * y + m[i][2] * z + m[i][3]);
}

export function transformVector(m, [x, y, z]) {
  return [0, 1, 2].map((i) => m[i][0] * x + m[i][1] * y + m[i][2] * z);
}

/** Inverse of an affine 4x4 (rotation may include scale; general 3x3 inverse). */
export function invertAffine(m) {
  const [a, b, c] = [m[0], m[1], m[2]];
  const det =
    a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]);
  if (!Number.isFinite(det) || Math.abs(det) < 1e-12) throw new Error('t_sim_from_vp_anchor is not invertible');
  const inv = [
    [(b[1] * c[2] - b[2] * c[1]) / det, (a[2] * c[1] - a[1] * c[2]) / det, (a[1] * b[2] - a[2] * b[1]) / det],
    [(b[2] * c[0] - b[0] * c[2]) / det, (a[0] * c[2] - a[2] * c[0]) / det, (a[2] * b[0] - a[0] * b[2]) / det],
    [(b[0] * c[1] - b[1] * c[0]) / det, (a[1] * c[0] - a[0] * c[1]) / det, (a[0] * b[1] - a[1] * b[0]) / det],
  ];
  const t = [m[0][3], m[1][3], m[2][3]];
  const out = inv.map((row) => [...row, -(row[0] * t[0] + row[1] * t[1] + row[2] * t[2])]);
  out.push([0, 0, 0, 1]);
  return out;
}

/** The 4x4 taking XR coordinates to anchor coordinates. */
export const ANCHOR_FROM_XR_4 = [
  [...ANCHOR_FROM_XR[0], 0],
  [...ANCHOR_FROM_XR[1], 0],
  [...ANCHOR_FROM_XR[2], 0],
  [0, 0, 0, 1],
];

/**
 * The page's frames for one scene: `simFromXr` places the operator's floor space in the sim
 * (T * ANCHOR_FROM_XR); `xrFromSim` places the sim's scene in front of the operator.
 */
export function frames(tSimFromAnchor) {
  const t = mat4(tSimFromAnchor);
  const anchorFromSim = invertAffine(t);
  const simFromXr = mul4(t, ANCHOR_FROM_XR_4);
  return { t, anchorFromSim, simFromXr, xrFromSim: invertAffine(simFromXr) };
}

function dist(a, b) {
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

/**
 * The clutch: while it is held the end effector follows the hand's motion since the press,
 * starting from where the arm is, so pressing never makes the arm jump (re-anchoring). A hand
 * pose that jumps more than `jumpLimit` between two frames (tracking lost and found, a swapped
 * hand) releases it; it stays released until the button is let go and pressed again.
 */
export class Clutch {
  constructor({ anchorFromSim, jumpLimit = JUMP_LIMIT_M } = {}) {
    this.anchorFromSim = anchorFromSim;
    this.jumpLimit = jumpLimit;
    this.engaged = false;
    this.blocked = false;
    this.handStart = null;
    this.eeStart = null;
    this.lastHand = null;
    this.target = null;
    this.released = null;
  }

  /**
   * One frame. `pressed`: the clutch button or pinch; `hand`: the hand's position in XR
   * coordinates, or null when it is not tracked; `eeSim`: the end effector (or its setpoint)
   * in the sim frame, from the latest state frame. Returns `{ clutch, target }`: the control
   * frame's `clutch_enabled` and `left_target_pos_m` (anchor frame), and `released` ('jump' or
   * 'lost') on the frame the guard let go.
   */
  update({ pressed, hand, eeSim }) {
    this.released = null;
    if (!pressed) {
      this.engaged = false;
      this.blocked = false;
    } else if (this.engaged && !hand) {
      this.release('lost');
    } else if (this.engaged && this.lastHand && dist(hand, this.lastHand) > this.jumpLimit) {
      this.release('jump');
    } else if (!this.engaged && !this.blocked && hand && eeSim) {
      this.engaged = true;
      this.handStart = xrToAnchor(hand);
      this.eeStart = transformPoint(this.anchorFromSim, eeSim);
    }
    this.lastHand = hand;
    if (this.engaged) {
      const h = xrToAnchor(hand);
      this.target = [0, 1, 2].map((i) => this.eeStart[i] + h[i] - this.handStart[i]);
    } else if (eeSim) {
      // Released: the frame still needs a target; where the arm is, which the sim ignores.
      this.target = transformPoint(this.anchorFromSim, eeSim);
    }
    return { clutch: this.engaged, target: this.target, released: this.released };
  }

  release(why) {
    this.engaged = false;
    this.blocked = true;
    this.released = why;
  }
}

/** Thumb tip and index tip closer than this: a pinch (m). */
export const PINCH_ON_M = 0.015;
/** ...and it ends when they part beyond this (hysteresis against flicker). */
export const PINCH_OFF_M = 0.03;

/** Pinch with hysteresis from the two fingertip positions. */
export function pinched(wasPinched, thumbTip, indexTip) {
  if (!thumbTip || !indexTip) return false;
  const d = dist(thumbTip, indexTip);
  return wasPinched ? d < PINCH_OFF_M : d < PINCH_ON_M;
}
