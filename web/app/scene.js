// The simulation drawn with three.js from `/scene.json`: the table, the objects, the goal zone,
// the workspace box and the robot's links (their visual shapes), all under one `sim` group in
// the sim frame (Z up). The page places that group in the operator's space (`xrFromSim`), and
// each state frame moves the links (`extensions.link_poses`) and the objects. A link's `mesh`
// visual is fetched from the server as one binary buffer per part (`robot.meshes`), once per mesh
// however many geoms use it, and appears when it arrives.

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

/** Indices are u16 below this many vertices, else u32 (as the server's mesh_buffers.rs writes). */
export const U16_BELOW = 65536;

/**
 * Decodes a mesh buffer (`/meshes/<mesh>/<part>.bin`, already un-gzipped by the browser):
 * little-endian u32 vertex count V, u32 triangle count T, V×3 f32 positions, then T×3 indices,
 * u16 when V < 65536 else u32. Returns `{ vertices, triangles, positions, indices }` (typed arrays
 * over copies of the bytes); throws on a buffer of the wrong length or with an index out of range.
 */
export function decodeMeshBuffer(buffer) {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  if (bytes.byteLength < 8) throw new Error(`mesh buffer of ${bytes.byteLength} bytes: no header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vertices = view.getUint32(0, true);
  const triangles = view.getUint32(4, true);
  const narrow = vertices < U16_BELOW;
  const indexBytes = narrow ? 2 : 4;
  const expected = 8 + vertices * 12 + triangles * 3 * indexBytes;
  if (bytes.byteLength !== expected) {
    throw new Error(`mesh buffer: ${vertices} vertices and ${triangles} triangles take ${expected} bytes, got ${bytes.byteLength}`);
  }
  const positions = new Float32Array(vertices * 3);
  const indices = narrow ? new Uint16Array(triangles * 3) : new Uint32Array(triangles * 3);
  const little = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  const at = 8 + vertices * 12;
  if (little) {
    // Copy into fresh, aligned buffers; the platform reads little-endian as it is.
    new Uint8Array(positions.buffer).set(bytes.subarray(8, at));
    new Uint8Array(indices.buffer).set(bytes.subarray(at, expected));
  } else {
    for (let i = 0; i < positions.length; i++) positions[i] = view.getFloat32(8 + i * 4, true);
    for (let i = 0; i < indices.length; i++) indices[i] = narrow ? view.getUint16(at + i * 2, true) : view.getUint32(at + i * 4, true);
  }
  for (let i = 0; i < indices.length; i++) {
    if (indices[i] >= vertices) throw new Error(`mesh buffer: index ${indices[i]} of ${vertices} vertices`);
  }
  return { vertices, triangles, positions, indices };
}

/** A `THREE.BufferGeometry` of a decoded buffer, with smooth normals. */
export function meshGeometry({ positions, indices }) {
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(positions, 3));
  geometry.setIndex(new THREE.BufferAttribute(indices, 1));
  geometry.computeVertexNormals();
  geometry.computeBoundingSphere();
  return geometry;
}

/** A geom's colour on a mesh part: the geom's RGBA times the part's own, if it has one. */
export function partColor(rgba, color) {
  const base = rgba ?? [0.7, 0.7, 0.7, 1];
  if (!color) return base;
  return [0, 1, 2, 3].map((i) => (base[i] ?? 1) * (color[i] ?? 1));
}

/**
 * Fetches meshes by index from `/scene.json`'s `robot.meshes`, once each, with the pairing key:
 * `load(mesh)` resolves to `[{ geometry, color }]`, one per part, shared by every geom.
 */
export function meshLoader(meshes, { key, fetchFn = globalThis.fetch } = {}) {
  const cache = new Map();
  const withKey = (url) => (key ? `${url}${url.includes('?') ? '&' : '?'}key=${encodeURIComponent(key)}` : url);
  return function load(mesh) {
    if (!cache.has(mesh)) {
      const parts = meshes?.[mesh]?.parts;
      const loading = parts
        ? Promise.all(parts.map(async (part) => {
          const response = await fetchFn(withKey(part.url));
          if (!response.ok) throw new Error(`armsim answered ${response.status} for ${part.url}`);
          const decoded = decodeMeshBuffer(await response.arrayBuffer());
          if (decoded.vertices !== part.vertices || decoded.triangles !== part.triangles) {
            throw new Error(`${part.url}: ${decoded.vertices}/${decoded.triangles} vertices/triangles, /scene.json says ${part.vertices}/${part.triangles}`);
          }
          return { geometry: meshGeometry(decoded), color: part.color };
        }))
        : Promise.reject(new Error(`/scene.json has no mesh ${mesh}`));
      cache.set(mesh, loading);
    }
    return cache.get(mesh);
  };
}

function setPose(object, pose) {
  if (!pose) return;
  object.position.fromArray(pose.pos_m);
  object.quaternion.fromArray(pose.quat_xyzw); // x, y, z, w: the wire order
}

/**
 * Builds the scene; returns `{ sim, links, objects, applyState, eeMarker, target, meshesReady }`.
 * `meshesReady` resolves to `{ parts, failed }` once every mesh visual is drawn (or has failed:
 * a mesh that cannot be fetched is left out, with a warning). `options.key` is the pairing key
 * the mesh buffers need (default: the page URL's `?key=`), `options.fetchFn` the fetch to use.
 */
export function buildScene(info, options = {}) {
  const key = options.key ?? new URLSearchParams(globalThis.location?.search ?? '').get('key') ?? '';
  const loadMesh = meshLoader(info.robot.meshes, { key, fetchFn: options.fetchFn });
  const pending = [];
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
      const holder = new THREE.Group();
      setPose(holder, v.pose);
      if (v.shape.type === 'mesh') {
        // Drawn when its parts arrive; the holder is in place (and moving) from the start.
        holder.scale.fromArray(v.shape.scale ?? [1, 1, 1]);
        pending.push(loadMesh(v.shape.mesh).then((parts) => {
          for (const part of parts) holder.add(new THREE.Mesh(part.geometry, material(partColor(v.rgba, part.color))));
          return parts.length;
        }));
      } else {
        const mesh = shapeMesh(v.shape, v.rgba);
        if (!mesh) continue;
        holder.add(mesh);
      }
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

  const meshesReady = Promise.allSettled(pending).then((results) => {
    const failed = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason?.message ?? r.reason));
    for (const why of new Set(failed)) console.warn('armsim: a mesh was not drawn:', why);
    return { parts: results.reduce((n, r) => n + (r.status === 'fulfilled' ? r.value : 0), 0), failed };
  });

  return { sim, links, objects, applyState, eeMarker, target, meshesReady };
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
