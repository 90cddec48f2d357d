// The headset page: loads `/scene.json`, joins the revA session over wss on the same origin as
// an observer (watching never holds the arm), draws the live scene, asks for the arm when the
// user starts to drive (Enter XR, "Teleop", Start, or the HUD's take-control button), and drives
// it from an XR controller or hand (immersive-ar with passthrough where offered, else
// immersive-vr), or from the mouse on a desktop. The logic that
// decides where the arm goes lives in mapping.js and protocol.js (tested under node); this file
// wires it to the browser.

import * as THREE from '../vendor/three.module.js';
import { Clutch, frames, pinched } from './mapping.js';
import { TeleopClient } from './protocol.js';
import { addSurroundings, buildScene } from './scene.js';
import { CONTROL, XrHud, hudLines } from './hud.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const key = params.get('key') ?? '';
// `?scale=0.5`: render the headset view at a fraction of the device's resolution (a slow
// device, or a software renderer in tests); default: the device's own.
const scale = Math.min(1, Math.max(0.1, Number(params.get('scale')) || 1));

function fail(text) {
  $('error').textContent = text;
  throw new Error(text);
}

const response = await fetch(`/scene.json?key=${encodeURIComponent(key)}`);
if (!response.ok) {
  fail(response.status === 403
    ? 'armsim refused the pairing key: open the URL armsim logged at start (…/?key=KEY).'
    : `armsim answered ${response.status} for /scene.json`);
}
const info = await response.json();
const f = frames(info.t_sim_from_vp_anchor);
const toMatrix = (rows) => new THREE.Matrix4().set(...rows.flat());
const xrFromSim = toMatrix(f.xrFromSim);
const simFromXr = toMatrix(f.simFromXr);

// --- rendering -----------------------------------------------------------------------------
const renderer = new THREE.WebGLRenderer({ antialias: true, alpha: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(Math.min(devicePixelRatio, 2));
renderer.setSize(innerWidth, innerHeight);
renderer.xr.enabled = true;
renderer.xr.setReferenceSpaceType('local-floor');
renderer.xr.setFramebufferScaleFactor(scale);
$('view').appendChild(renderer.domElement);
const scene = new THREE.Scene();
const background = new THREE.Color(0x2a2f3a);
scene.background = background;
addSurroundings(scene, { floor: true });
const floor = scene.children.find((c) => c.type === 'GridHelper');
const world = buildScene(info);
world.sim.matrixAutoUpdate = false;
world.sim.matrix.copy(xrFromSim);
scene.add(world.sim);
const camera = new THREE.PerspectiveCamera(55, innerWidth / innerHeight, 0.02, 50);
addEventListener('resize', () => {
  camera.aspect = innerWidth / innerHeight;
  camera.updateProjectionMatrix();
  renderer.setSize(innerWidth, innerHeight);
});

// --- orbit camera (desktop) ----------------------------------------------------------------
const t = info.table;
const focus = new THREE.Vector3(t.center_xy_m[0], t.center_xy_m[1], t.top_height_m).applyMatrix4(xrFromSim);
// A three-quarter view from the table's far side, the arm behind the cubes.
const orbit = { yaw: 2.3, pitch: 0.62, dist: 1.7 };
function placeCamera() {
  const { yaw, pitch, dist } = orbit;
  camera.position.set(
    focus.x + dist * Math.cos(pitch) * Math.sin(yaw),
    focus.y + dist * Math.sin(pitch),
    focus.z + dist * Math.cos(pitch) * Math.cos(yaw),
  );
  camera.lookAt(focus);
}
placeCamera();

// --- session ----------------------------------------------------------------------------------
const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${info.ws_path}?key=${encodeURIComponent(key)}`;
const client = new TeleopClient({
  url: wsUrl,
  sceneId: info.scene_id,
  heartbeat: info.heartbeat,
  WebSocketImpl: WebSocket,
  now: () => performance.timeOrigin + performance.now(),
  onChange: () => {},
  reconnectMs: 2000,
  // Watch until the user drives: a page opened only to look never keeps the arm from the headset.
  role: 'observer',
});
client.open();
// Heartbeats from a timer too, so a session outlives a hidden tab's paused animation frames.
setInterval(() => client.tick(), 100);
/** A HUD button (desktop or headset panel): Start asks for the arm with it; the control button
 * takes a free arm or gives it back (when another client has it, the server says so). */
function press(button) {
  if (button === 'START') client.start();
  else if (button === CONTROL) {
    if (client.role === 'controller') client.releaseControl();
    else client.requestControl();
  } else client.command(button);
}
for (const [id, button] of [['start', 'START'], ['pause', 'PAUSE'], ['reset', 'RESET'], ['control', CONTROL]]) {
  $(id).addEventListener('click', () => press(button));
}

const clutch = new Clutch({ anchorFromSim: f.anchorFromSim });
const control = { clutch: false, grip: false, target: null, released: null, frames: 0 };
/** The end effector in the sim frame: the setpoint while there is one (continuity), else measured. */
function eeSim() {
  const s = client.state;
  return s?.extensions?.ee_target_m ?? s?.ee_pos_m ?? null;
}
function drive(pressed, handXr, grip) {
  const out = clutch.update({ pressed, hand: handXr, eeSim: eeSim() });
  control.clutch = out.clutch;
  control.grip = grip;
  control.target = out.target;
  if (out.released) {
    control.released = out.released;
    control.releasedAt = performance.now();
  }
  if (out.target && client.control({ target: out.target, grip, clutch: out.clutch })) control.frames += 1;
  world.target.visible = out.clutch;
  if (out.clutch) {
    world.target.position.fromArray(handXr).applyMatrix4(simFromXr);
  }
}

// --- desktop teleop: a target dragged on a horizontal plane --------------------------------
const desk = { on: false, space: false, mouse: false, grip: false, planeY: null, pointer: null, orbiting: null };
const raycaster = new THREE.Raycaster();
function pointerHand() {
  if (!desk.pointer) return null;
  raycaster.setFromCamera(desk.pointer, camera);
  const plane = new THREE.Plane(new THREE.Vector3(0, 1, 0), -desk.planeY);
  const hit = raycaster.ray.intersectPlane(plane, new THREE.Vector3());
  return hit ? hit.toArray() : null;
}
$('teleop').addEventListener('change', (e) => {
  desk.on = e.target.checked;
  if (desk.on) client.requestControl();
  const ee = eeSim();
  desk.planeY = ee ? new THREE.Vector3(...ee).applyMatrix4(xrFromSim).y : focus.y + 0.1;
});
const canvas = renderer.domElement;
canvas.addEventListener('contextmenu', (e) => e.preventDefault());
canvas.addEventListener('pointerdown', (e) => {
  if (desk.on && e.button === 0) desk.mouse = true;
  else desk.orbiting = { x: e.clientX, y: e.clientY };
});
addEventListener('pointerup', () => {
  desk.mouse = false;
  desk.orbiting = null;
});
canvas.addEventListener('pointermove', (e) => {
  desk.pointer = new THREE.Vector2((e.clientX / innerWidth) * 2 - 1, -(e.clientY / innerHeight) * 2 + 1);
  if (desk.orbiting) {
    orbit.yaw -= (e.clientX - desk.orbiting.x) * 0.006;
    orbit.pitch = Math.min(1.5, Math.max(-0.2, orbit.pitch + (e.clientY - desk.orbiting.y) * 0.006));
    desk.orbiting = { x: e.clientX, y: e.clientY };
    placeCamera();
  }
});
canvas.addEventListener('wheel', (e) => {
  orbit.dist = Math.min(8, Math.max(0.4, orbit.dist * (e.deltaY > 0 ? 1.1 : 0.9)));
  placeCamera();
}, { passive: true });
addEventListener('keydown', (e) => {
  if (e.code === 'Space') { desk.space = true; e.preventDefault(); }
  if (e.code === 'KeyG' && !e.repeat) desk.grip = !desk.grip;
  if (e.code === 'KeyR' && desk.planeY != null) desk.planeY += 0.01;
  if (e.code === 'KeyF' && desk.planeY != null) desk.planeY -= 0.01;
});
addEventListener('keyup', (e) => {
  if (e.code === 'Space') desk.space = false;
});

// --- XR ----------------------------------------------------------------------------------------
const hud = new XrHud();
hud.mesh.visible = false;
scene.add(hud.mesh);
const xrState = { mode: null, pinch: new Map(), selecting: new Set(), hudPress: new Set() };
let xrMode = null;
if (navigator.xr) {
  if (await navigator.xr.isSessionSupported('immersive-ar').catch(() => false)) xrMode = 'immersive-ar';
  else if (await navigator.xr.isSessionSupported('immersive-vr').catch(() => false)) xrMode = 'immersive-vr';
}
$('xr').disabled = !xrMode;
$('xr').textContent = xrMode ? `Enter XR (${xrMode.replace('immersive-', '').toUpperCase()})` : 'XR not available';
$('xr').addEventListener('click', async () => {
  if (renderer.xr.isPresenting) {
    await renderer.xr.getSession().end();
    return;
  }
  const session = await navigator.xr.requestSession(xrMode, {
    requiredFeatures: ['local-floor'],
    optionalFeatures: ['hand-tracking', 'bounded-floor'],
  });
  session.addEventListener('selectstart', (e) => xrState.selecting.add(e.inputSource));
  session.addEventListener('selectend', (e) => {
    xrState.selecting.delete(e.inputSource);
    xrState.hudPress.delete(e.inputSource);
  });
  session.addEventListener('end', () => {
    xrState.mode = null;
    scene.background = background;
    floor.visible = true;
    hud.mesh.visible = false;
    $('xr').textContent = `Enter XR (${xrMode.replace('immersive-', '').toUpperCase()})`;
  });
  await renderer.xr.setSession(session);
  xrState.mode = xrMode;
  // Entering XR is starting to drive: ask for the arm (it moves after Start).
  client.requestControl();
  // Passthrough: the room stays visible, only the table, the cubes and the arm are drawn.
  const passthrough = xrMode === 'immersive-ar';
  scene.background = passthrough ? null : background;
  floor.visible = !passthrough;
  // The panel to the operator's left, facing them.
  hud.mesh.position.set(-0.45, 1.35, -0.45);
  hud.mesh.lookAt(0, 1.35, 0);
  hud.mesh.visible = true;
  $('xr').textContent = 'Exit XR';
});

const tmp = new THREE.Matrix4();
/** One XR frame's input: the arm hand's position, its clutch, and the gripper. */
function xrInput(frame) {
  const ref = renderer.xr.getReferenceSpace();
  const session = frame.session;
  const sources = [...session.inputSources];
  const arm = sources.find((s) => s.handedness === 'right') ?? sources[0];
  let pressed = false;
  let hand = null;
  let grip = false;
  for (const src of sources) {
    const pose = src.gripSpace ? frame.getPose(src.gripSpace, ref) : null;
    const pos = pose ? [pose.transform.position.x, pose.transform.position.y, pose.transform.position.z] : null;
    let squeeze = false;
    let trigger = false;
    if (src.hand) {
      const tip = (name) => {
        const j = src.hand.get(name);
        const p = j && frame.getJointPose ? frame.getJointPose(j, ref) : null;
        return p ? [p.transform.position.x, p.transform.position.y, p.transform.position.z] : null;
      };
      const was = xrState.pinch.get(src) ?? false;
      const now = pinched(was, tip('thumb-tip'), tip('index-finger-tip'));
      xrState.pinch.set(src, now);
      squeeze = now;
    } else if (src.targetRayMode === 'transient-pointer') {
      squeeze = xrState.selecting.has(src); // Vision Pro: a pinch while looking
    } else if (src.gamepad) {
      squeeze = (src.gamepad.buttons[1]?.value ?? 0) > 0.5;
      trigger = (src.gamepad.buttons[0]?.value ?? 0) > 0.5;
    }
    // Pointing at the panel: the trigger presses its buttons, not the gripper.
    if (trigger && src.targetRaySpace && !xrState.hudPress.has(src)) {
      const ray = frame.getPose(src.targetRaySpace, ref);
      if (ray) {
        tmp.fromArray(ray.transform.matrix);
        raycaster.ray.origin.setFromMatrixPosition(tmp);
        raycaster.ray.direction.set(0, 0, -1).transformDirection(tmp);
        const hit = raycaster.intersectObject(hud.mesh)[0];
        const button = hit?.uv ? hud.buttonAt(hit.uv) : null;
        if (button) {
          press(button);
          xrState.hudPress.add(src);
        }
      }
    }
    if (!trigger) xrState.hudPress.delete(src);
    const onHud = xrState.hudPress.has(src);
    if (src === arm) {
      pressed = squeeze;
      hand = pos;
      if (trigger && !onHud) grip = true;
    } else if (src.hand || src.targetRayMode === 'transient-pointer') {
      if (squeeze) grip = true; // the other hand's pinch
    } else if (trigger && !onHud) {
      grip = true;
    }
  }
  return { pressed, hand, grip };
}

// --- the loop ----------------------------------------------------------------------------------
renderer.setAnimationLoop((_, frame) => {
  client.tick();
  if (client.state) world.applyState(client.state);
  const lines = hudLines(client);
  if (control.releasedAt && performance.now() - control.releasedAt < 3000) {
    lines.alerts.unshift(control.released === 'jump'
      ? 'clutch released: the hand jumped over 6 cm; press again'
      : 'clutch released: hand lost; press again');
  }
  if (frame) {
    const { pressed, hand, grip } = xrInput(frame);
    drive(pressed, hand, grip);
    hud.draw(lines);
  } else if (desk.on) {
    drive(desk.space || desk.mouse, pointerHand(), desk.grip);
  } else {
    world.target.visible = false; // watching: no control frames
  }
  $('state').textContent = lines.state;
  $('arm').textContent = lines.arm;
  if ($('control').textContent !== lines.control) $('control').textContent = lines.control;
  $('rtt').textContent = lines.rtt;
  $('play').textContent = lines.play;
  $('alerts').textContent = lines.alerts.join('\n');
  renderer.render(scene, camera);
});

// For tests and for a console: the session, the control state and the figures.
window.armsim = {
  client,
  info,
  control,
  xrMode,
  stats: () => ({ ...client.latency.summary(), control_frames: control.frames }),
  hud: () => hudLines(client),
  presenting: () => renderer.xr.isPresenting,
  renderedFrames: () => renderer.info.render.frame,
  world,
  ready: true,
};
