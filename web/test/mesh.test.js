// The robot's mesh buffers (`/meshes/<mesh>/<part>.bin`): the page's reader against the format the
// server writes (crates/armsim-core/src/protocol/teleop/mesh_buffers.rs), the colours, and the
// loader that fetches each mesh once, with the pairing key, and builds three.js geometry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  U16_BELOW, buildScene, decodeMeshBuffer, meshLoader, partColor,
} from '../app/scene.js';

// The bytes the Rust encoder's golden test pins: 3 vertices, 1 triangle, u16 indices.
const GOLDEN_HEX = '03000000010000000000803f0000004000004040000080bf0000003f0000000000'
  + '00000000000000000000c0000001000200';
const fromHex = (hex) => new Uint8Array(hex.match(/../g).map((h) => parseInt(h, 16)));

/** The server's format, written independently of the reader: LE counts, f32 xyz, u16/u32. */
function encode(positions, triangles) {
  const v = positions.length;
  const wide = v >= 65536;
  const size = 8 + v * 12 + triangles.length * 3 * (wide ? 4 : 2);
  const view = new DataView(new ArrayBuffer(size));
  view.setUint32(0, v, true);
  view.setUint32(4, triangles.length, true);
  let at = 8;
  for (const p of positions) for (const c of p) { view.setFloat32(at, c, true); at += 4; }
  for (const t of triangles) {
    for (const i of t) {
      if (wide) view.setUint32(at, i, true); else view.setUint16(at, i, true);
      at += wide ? 4 : 2;
    }
  }
  return view.buffer;
}

test('the documented bytes decode to their vertices and triangle', () => {
  const bytes = fromHex(GOLDEN_HEX);
  assert.equal(bytes.length, 50);
  const m = decodeMeshBuffer(bytes.buffer);
  assert.equal(m.vertices, 3);
  assert.equal(m.triangles, 1);
  assert.deepEqual([...m.positions], [1, 2, 3, -1, 0.5, 0, 0, 0, -2]);
  assert.ok(m.indices instanceof Uint16Array);
  assert.deepEqual([...m.indices], [0, 1, 2]);
  // A view into a larger buffer at an odd offset decodes the same.
  const padded = new Uint8Array(51);
  padded.set(bytes, 1);
  assert.deepEqual([...decodeMeshBuffer(padded.subarray(1)).positions], [...m.positions]);
});

test('indices are u16 below 65536 vertices, u32 from there', () => {
  assert.equal(U16_BELOW, 65536);
  for (const v of [65535, 65536]) {
    const positions = Array.from({ length: v }, (_, i) => [i * 1e-3, -i, 0.25]);
    const triangles = [[0, 1, v - 1], [v - 2, v - 1, 0]];
    const m = decodeMeshBuffer(encode(positions, triangles));
    assert.equal(m.indices instanceof Uint32Array, v === 65536, `${v} vertices`);
    assert.deepEqual([...m.indices], triangles.flat());
    assert.equal(m.positions[3 * (v - 1) + 1], -(v - 1));
  }
});

test('a buffer of the wrong length or with an index out of range is refused', () => {
  const good = new Uint8Array(encode([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]));
  assert.throws(() => decodeMeshBuffer(good.slice(0, good.length - 1).buffer), /take 50 bytes, got 49/);
  assert.throws(() => decodeMeshBuffer(new Uint8Array(4).buffer), /no header/);
  assert.throws(() => decodeMeshBuffer(encode([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]])), /index 3 of 3/);
  assert.equal(decodeMeshBuffer(encode([], [])).vertices, 0);
});

test("a part is drawn in the geom's colour times its own", () => {
  assert.deepEqual(partColor([1, 1, 1, 1], null), [1, 1, 1, 1]);
  assert.deepEqual(partColor([0.5, 1, 1, 1], [0.2, 0.4, 1, 0.5]), [0.1, 0.4, 1, 0.5]);
  assert.deepEqual(partColor(undefined, null), [0.7, 0.7, 0.7, 1]);
});

/** A fetch that serves `buffers` (URL path -> ArrayBuffer) and records what it was asked. */
function fakeFetch(buffers) {
  const asked = [];
  const fetchFn = async (url) => {
    asked.push(url);
    const body = buffers[url.split('?')[0]];
    return body
      ? { ok: true, status: 200, arrayBuffer: async () => body }
      : { ok: false, status: 404, arrayBuffer: async () => new ArrayBuffer(0) };
  };
  return { fetchFn, asked };
}

const TRI = encode([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]);
const QUAD = encode([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]]);
const MESHES = [
  {
    parts: [
      { url: '/meshes/0/0.bin?v=aa', vertices: 3, triangles: 1, color: null },
      { url: '/meshes/0/1.bin?v=bb', vertices: 4, triangles: 2, color: [0.5, 0.5, 0.5, 1] },
    ],
  },
  { parts: [{ url: '/meshes/1/0.bin?v=cc', vertices: 3, triangles: 1, color: null }] },
];

test('each mesh is fetched once, with the key, and its geometry shared', async () => {
  const { fetchFn, asked } = fakeFetch({ '/meshes/0/0.bin': TRI, '/meshes/0/1.bin': QUAD });
  const load = meshLoader(MESHES, { key: 'k y', fetchFn });
  const [a, b] = await Promise.all([load(0), load(0)]);
  assert.equal(a, b, 'one promise per mesh');
  assert.deepEqual(asked, ['/meshes/0/0.bin?v=aa&key=k%20y', '/meshes/0/1.bin?v=bb&key=k%20y']);
  assert.equal(a.length, 2);
  const g = a[1].geometry;
  assert.equal(g.getAttribute('position').count, 4);
  assert.equal(g.getIndex().count, 6);
  assert.equal(g.getAttribute('normal').count, 4, 'normals computed');
  assert.ok(Math.abs(g.getAttribute('normal').getZ(0) - 1) < 1e-6, 'a flat quad in z = 0 faces +z');
  await assert.rejects(load(1), /404/);
  await assert.rejects(load(7), /no mesh 7/);
});

test('counts that disagree with /scene.json are an error, not a wrong drawing', async () => {
  const { fetchFn } = fakeFetch({ '/meshes/1/0.bin': QUAD });
  await assert.rejects(meshLoader(MESHES, { fetchFn })(1), /scene.json says 3\/1/);
});

test('mesh visuals are scaled, coloured per part and drawn once their parts arrive', async () => {
  const { fetchFn, asked } = fakeFetch({ '/meshes/0/0.bin': TRI, '/meshes/0/1.bin': QUAD });
  const pose = { pos_m: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] };
  const visual = (mesh, rgba, scale) => ({ shape: { type: 'mesh', mesh, scale }, pose, rgba });
  const info = {
    table: { size_xy_m: [1, 1], top_height_m: 1, center_xy_m: [0, 0], rgba: [1, 1, 1, 1] },
    goal_zone: null,
    workspace_aabb_m: { min: [0, 0, 0], max: [1, 1, 1] },
    objects: [],
    robot: {
      links: [
        { name: 'a', parent: null, visuals: [visual(0, [1, 0.8, 0.6, 1], [1, 2, 3])] },
        { name: 'b', parent: 'a', visuals: [visual(0, [1, 1, 1, 1], [1, 1, 1]), visual(1, [1, 1, 1, 1], [1, 1, 1])] },
      ],
      link_poses: { a: pose, b: pose },
      meshes: MESHES,
    },
  };
  const world = buildScene(info, { key: 'secret', fetchFn });
  const ready = await world.meshesReady;
  assert.equal(ready.parts, 4, 'two parts for each of the two geoms of mesh 0');
  assert.equal(ready.failed.length, 1, 'mesh 1 is not served: left out');
  assert.equal(asked.length, 3, 'mesh 0 fetched once for two geoms (and mesh 1 tried once)');
  const [holderA] = world.links.get('a').children;
  assert.deepEqual(holderA.scale.toArray(), [1, 2, 3]);
  assert.equal(holderA.children.length, 2);
  const [plain, tinted] = holderA.children.map((m) => m.material.color.toArray());
  assert.deepEqual(plain.map((c) => +c.toFixed(3)), [1, 0.8, 0.6]);
  assert.deepEqual(tinted.map((c) => +c.toFixed(3)), [0.5, 0.4, 0.3]);
  const [holderB] = world.links.get('b').children;
  assert.equal(holderB.children[0].geometry, holderA.children[0].geometry, 'geometry shared between geoms');
});
