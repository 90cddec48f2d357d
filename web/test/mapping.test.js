// The page's pure logic: frames, the clutch with its re-anchoring and jump guard, pinches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Clutch, anchorToXr, frames, invertAffine, mul4, pinched, transformPoint, xrToAnchor,
} from '../app/mapping.js';

const IDENTITY = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
const near = (a, b, eps = 1e-9) => a.every((v, i) => Math.abs(v - b[i]) < eps);

test('XR axes map to robotics axes: forward is +X, left is +Y, up is +Z', () => {
  assert.ok(near(xrToAnchor([0, 0, -1]), [1, 0, 0]));
  assert.ok(near(xrToAnchor([-1, 0, 0]), [0, 1, 0]));
  assert.ok(near(xrToAnchor([0, 1, 0]), [0, 0, 1]));
  assert.ok(near(anchorToXr(xrToAnchor([0.3, -0.2, 0.7])), [0.3, -0.2, 0.7]));
});

test('the scene transform places the operator and inverts exactly', () => {
  // Operator 0.5 m behind the robot base, turned 90 degrees about Z.
  const t = [[0, -1, 0, -0.5], [1, 0, 0, 0.1], [0, 0, 1, 0], [0, 0, 0, 1]];
  const f = frames(t);
  assert.ok(mul4(f.simFromXr, f.xrFromSim).every((row, i) => near(row, IDENTITY[i])));
  // One metre forward in XR is along the anchor's +X, which T turns to sim +Y.
  const p = transformPoint(f.simFromXr, [0, 0, -1]);
  assert.ok(near(p, [-0.5, 1.1, 0]), `${p}`);
  assert.throws(() => invertAffine([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]));
  assert.throws(() => frames([[1, 0, 0]]));
});

test('the clutch starts from the arm, follows the hand, and re-anchors without a jump', () => {
  const { anchorFromSim } = frames(IDENTITY);
  const c = new Clutch({ anchorFromSim });
  const ee = [0.5, 0, 1.2];
  // Released: the target is where the arm is.
  let out = c.update({ pressed: false, hand: [0, 1, 0], eeSim: ee });
  assert.equal(out.clutch, false);
  assert.ok(near(out.target, ee));
  // Pressed: same target on the first frame, whatever the hand's absolute position.
  out = c.update({ pressed: true, hand: [0.2, 1.3, -0.4], eeSim: ee });
  assert.equal(out.clutch, true);
  assert.ok(near(out.target, ee));
  // Hand 4 cm to the right (XR +X) = anchor -Y, in steps under the jump limit.
  c.update({ pressed: true, hand: [0.22, 1.3, -0.4], eeSim: ee });
  out = c.update({ pressed: true, hand: [0.24, 1.3, -0.4], eeSim: ee });
  assert.ok(near(out.target, [0.5, -0.04, 1.2]), `${out.target}`);
  // Let go, move the hand far away, press again: starts from the arm's new place.
  const moved = [0.5, -0.04, 1.2];
  c.update({ pressed: false, hand: [1, 1, 1], eeSim: moved });
  out = c.update({ pressed: true, hand: [1, 1, 1], eeSim: moved });
  assert.ok(near(out.target, moved));
});

test('a hand pose that jumps more than 6 cm releases the clutch until it is pressed again', () => {
  const c = new Clutch({ anchorFromSim: frames(IDENTITY).anchorFromSim });
  const ee = [0.5, 0, 1.2];
  c.update({ pressed: true, hand: [0, 1, 0], eeSim: ee });
  c.update({ pressed: true, hand: [0.05, 1, 0], eeSim: ee });
  let out = c.update({ pressed: true, hand: [0.12, 1, 0], eeSim: ee });
  assert.equal(out.clutch, false);
  assert.equal(out.released, 'jump');
  // Still held: stays released.
  out = c.update({ pressed: true, hand: [0.121, 1, 0], eeSim: ee });
  assert.equal(out.clutch, false);
  // Lost tracking while held also releases.
  c.update({ pressed: false, hand: [0.12, 1, 0], eeSim: ee });
  c.update({ pressed: true, hand: [0.12, 1, 0], eeSim: ee });
  out = c.update({ pressed: true, hand: null, eeSim: ee });
  assert.equal(out.released, 'lost');
});

test('pinch has hysteresis', () => {
  assert.equal(pinched(false, [0, 0, 0], [0.02, 0, 0]), false);
  assert.equal(pinched(false, [0, 0, 0], [0.01, 0, 0]), true);
  assert.equal(pinched(true, [0, 0, 0], [0.02, 0, 0]), true);
  assert.equal(pinched(true, [0, 0, 0], [0.04, 0, 0]), false);
  assert.equal(pinched(true, null, [0, 0, 0]), false);
});
