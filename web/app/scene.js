// The simulation drawn with three.js from `/scene.json`: the table, the objects, the goal zone,
// the workspace box and the robot's links (their visual shapes), all under one `sim` group in
// the sim frame (Z up). The page places that group in the operator's space (`xrFromSim`), and
// each state frame moves the links (`extensions.link_poses`) and the objects.

import * as THREE from '../vendor/three.module.js';

function material(rgba, extra = {}) {
  const [r, g, b, a = 1] = rgba ?? [0.7, 0.7, 0.7, 1];
  return new THREE.MeshStandardMaterial({
    color: new THREE.Color().setRGB(r, g, b, THREE.LinearSRGBColorSpace),
    roughness: 0.6,
    transparent: a < 1,
    opacity: a,
    ...extra,
  });
}

/** A mesh for a `/scene.json` shape; capsules and cylinders run along Z as in the sim. */
export function shapeMesh(shape, rgba) {
  let geometry;
  let alongZ = false;
  switch (shape.type) {
    case 'box':
      geometry = new THREE.BoxGeometry(...shape.size_m);
      break;
    case 'sphere':
      geometry = new THREE.SphereGeometry(shape.radius_m, 24, 16);
      break;
    case 'capsule':
      geometry = new THREE.CapsuleGeometry(shape.radius_m, shape.length_m, 8, 16);
      alongZ = true;
      break;
    case 'cylinder':
      geometry = new THREE.CylinderGeometry(shape.radius_m, shape.radius_m, shape.length_m, 24);
      alongZ = true;
      break;
    default:
      return null;
  }
  const mesh = new THREE.Mesh(geometry, material(rgba));
  if (alongZ) mesh.rotation.x = Math.PI / 2; // three's Y-axis shapes onto the model's Z axis
  return mesh;
}

function setPose(object, pose) {
  if (!pose) return;
  object.position.fromArray(pose.pos_m);
  object.quaternion.fromArray(pose.quat_xyzw); // x, y, z, w: the wire order
}

/** Builds the scene; returns `{ sim, links, objects, applyState, eeMarker, target }`. */
export function buildScene(info) {
  const sim = new THREE.Group();
  sim.name = 'sim';
  const t = info.table;
  const table = new THREE.Mesh(
    new THREE.BoxGeometry(t.size_xy_m[0], t.size_xy_m[1], t.top_height_m),
    material(t.rgba),
  );
  table.position.set(t.center_xy_m[0], t.center_xy_m[1], t.top_height_m / 2);
  table.name = 'table';
  sim.add(table);

  if (info.goal_zone) {
    const g = info.goal_zone;
    const zone = new THREE.Mesh(
      new THREE.BoxGeometry(g.half_size_m[0] * 2, g.half_size_m[1] * 2, 0.002),
      material([0.95, 0.8, 0.1, 0.6]),
    );
    zone.position.set(g.center_xy_m[0], g.center_xy_m[1], t.top_height_m + 0.001);
    zone.name = 'goal_zone';
    sim.add(zone);
  }

  const w = info.workspace_aabb_m;
  const size = [0, 1, 2].map((i) => w.max[i] - w.min[i]);
  const box = new THREE.LineSegments(
    new THREE.EdgesGeometry(new THREE.BoxGeometry(...size)),
    new THREE.LineBasicMaterial({ color: 0x40e0d0 }),
  );
  box.position.set(...[0, 1, 2].map((i) => (w.max[i] + w.min[i]) / 2));
  box.name = 'workspace';
  sim.add(box);

  const objects = new Map();
  for (const o of info.objects) {
    const mesh = shapeMesh(o.shape, o.rgba);
    if (!mesh) continue;
    mesh.name = o.name;
    setPose(mesh, o.pose);
    sim.add(mesh);
    objects.set(o.name, mesh);
  }

  const links = new Map();
  for (const link of info.robot.links) {
    const group = new THREE.Group();
    group.name = link.name;
    for (const v of link.visuals) {
      const mesh = shapeMesh(v.shape, v.rgba);
      if (!mesh) continue;
      const holder = new THREE.Group();
      setPose(holder, v.pose);
      holder.add(mesh);
      group.add(holder);
    }
    setPose(group, info.robot.link_poses[link.name]);
    sim.add(group);
    links.set(link.name, group);
  }

  // Where the arm is asked to go (the clamped setpoint), and where the hand points it.
  const eeMarker = new THREE.Mesh(new THREE.SphereGeometry(0.012, 12, 8), material([0.1, 0.9, 0.9, 0.8]));
  eeMarker.visible = false;
  sim.add(eeMarker);
  const target = new THREE.Mesh(new THREE.SphereGeometry(0.018, 16, 12), material([1, 0.3, 0.8, 0.7]));
  target.visible = false;
  sim.add(target);

  function applyState(frame) {
    const ext = frame?.extensions ?? {};
    for (const [name, pose] of Object.entries(ext.link_poses ?? {})) setPose(links.get(name) ?? new THREE.Group(), pose);
    for (const o of frame?.objects ?? []) {
      const mesh = objects.get(o.name);
      if (mesh) setPose(mesh, o.pose);
    }
    if (ext.ee_target_m) {
      eeMarker.position.fromArray(ext.ee_target_m);
      eeMarker.visible = true;
    } else {
      eeMarker.visible = false;
    }
  }

  return { sim, links, objects, applyState, eeMarker, target };
}

/** Floor, lights: what both the desktop and the VR view need around the sim. */
export function addSurroundings(scene, { floor }) {
  scene.add(new THREE.HemisphereLight(0xffffff, 0x444455, 2.0));
  const sun = new THREE.DirectionalLight(0xffffff, 1.5);
  sun.position.set(1, 3, 2);
  scene.add(sun);
  if (floor) {
    const grid = new THREE.GridHelper(6, 24, 0x666677, 0x44444c);
    scene.add(grid);
  }
}
