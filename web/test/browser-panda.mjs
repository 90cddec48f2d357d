// A real robot in the page: a headless armsim on the Panda scene (assets/scenes/panda.json with
// its robot at MuJoCo Menagerie's Panda, the copy in the fixture cache of scripts/robot-fixtures),
// and a desktop page in Debian's chromium (playwright-core) that draws it from /scene.json and the
// mesh buffers (`/meshes/<mesh>/<part>.bin`, gzipped on the wire). Checks: every mesh part arrives
// (gzipped where the server says so) and is drawn; by pixels, hiding the arm's links changes a
// large patch of the picture, most of it neutral (the Panda is white and off-white with black,
// i.e. dark grey, parts), with both bright and dark pixels in it. The screenshot goes to
// ARMSIM_WEB_OUT (default target/web-test/panda.png).
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
const KEY = 'browser-panda-key';
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s]`, ...a);

// The fixture cache (fetched from PyPI once by the script; its last line is the folder).
const fixtures = execFileSync(path.join(root, 'scripts/robot-fixtures'), { encoding: 'utf8' }).trim().split('\n').pop();
const mjcf = path.join(fixtures, 'genesis_world-1.4.5/genesis/assets/xml/franka_emika_panda/panda.xml');
const configDir = mkdtempSync(path.join(tmpdir(), 'armsim-web-panda-'));
const scene = JSON.parse(readFileSync(path.join(root, 'assets/scenes/panda.json'), 'utf8'));
scene.robot.mjcf_path = mjcf;
const scenePath = path.join(configDir, 'panda.json');
writeFileSync(scenePath, JSON.stringify(scene));

const { sim, url, log: armsimLog } = await startArmsim({ bin, scene: scenePath, key: KEY, configDir });
log('armsim serves the Panda at', url);
const served = armsimLog().match(/serving (\d+) mesh files as (\d+) buffers: (\d+) bytes, (\d+) gzipped/);
if (served) log(`mesh buffers: ${served[1]} files, ${served[2]} parts, ${served[3]} bytes raw, ${served[4]} gzipped`);


const browser = await launchChromium(chromePath, configDir);
let failed = false;
try {
  const page = await (await browser.newContext({ viewport: { width: 800, height: 500 } })).newPage();
  page.on('pageerror', (e) => log('page error:', e.message));
  page.on('console', (m) => { if (m.type() === 'warning' || m.type() === 'error') log('page console:', m.text()); });
  const meshResponses = [];
  page.on('response', (r) => {
    const where = new URL(r.url()).pathname;
    if (where.startsWith('/meshes/')) meshResponses.push(r);
    if (r.status() >= 400) log(`${r.status()} for ${where}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => window.armsim?.world && window.armsim.client?.state, null, { timeout: 30000 });
  const ready = await page.evaluate(() => window.armsim.world.meshesReady);
  const info = await page.evaluate(() => window.armsim.info);
  const parts = info.robot.meshes.reduce((n, m) => n + m.parts.length, 0);
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
  log(`meshes: ${info.robot.meshes.length} files, ${parts} parts in /scene.json; page drew ${ready.parts} part meshes`,
    `(${drawn.triangles} triangles), failed: ${ready.failed.length}`);
  assert.deepEqual(ready.failed, [], 'every mesh arrives');
  assert.ok(ready.parts >= 50 && drawn.meshes === ready.parts, `the Panda's visual parts are drawn (${ready.parts})`);
  // Each buffer came once (a mesh shared by geoms is fetched once), gzipped where smaller.
  const paths = meshResponses.map((r) => new URL(r.url()).pathname);
  assert.equal(new Set(paths).size, paths.length, 'each part fetched once');
  const encodings = await Promise.all(meshResponses.map(async (r) => (await r.allHeaders())['content-encoding'] ?? 'identity'));
  const gz = encodings.filter((e) => e === 'gzip').length;
  log(`${meshResponses.length} buffer responses, ${gz} gzipped`);
  assert.ok(meshResponses.length > 0 && gz * 2 > meshResponses.length, 'buffers come gzipped');
  assert.ok(meshResponses.every((r) => r.status() === 200));

  // Pixels: the view with the arm, then with its links hidden; what changed is the arm.
  await page.waitForTimeout(500);
  mkdirSync(outDir, { recursive: true });
  await page.screenshot({ path: path.join(outDir, 'panda.png') });
  const n = await page.evaluate(async () => {
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
    const count = { changed: 0, neutral: 0, bright: 0, dark: 0, coloured: 0 };
    for (let i = 0; i < withArm.length; i += 4) {
      const [r, g, b] = [withArm[i], withArm[i + 1], withArm[i + 2]];
      const d = Math.abs(r - without[i]) + Math.abs(g - without[i + 1]) + Math.abs(b - without[i + 2]);
      if (d < 24) continue;
      count.changed++;
      const max = Math.max(r, g, b);
      const min = Math.min(r, g, b);
      if (max > 0 && (max - min) / max > 0.25) {
        count.coloured++;
        continue;
      }
      count.neutral++;
      if (min >= 170) count.bright++;
      else if (max <= 110) count.dark++;
    }
    return count;
  });
  log('arm pixels (changed when its links are hidden)', n);
  assert.ok(n.changed >= 3000, `the arm covers a good part of the view (${n.changed} pixels)`);
  assert.ok(n.neutral >= 0.8 * n.changed, `the arm is white, grey and black, not coloured (${JSON.stringify(n)})`);
  assert.ok(n.bright >= 0.2 * n.changed, `white and off-white parts (${n.bright} bright pixels)`);
  assert.ok(n.dark >= 100, `black parts (${n.dark} dark pixels)`);
  log('screenshot', path.join(outDir, 'panda.png'));
} catch (e) {
  failed = true;
  console.error(e);
  console.error('--- armsim log ---\n', armsimLog().split('\n').slice(-40).join('\n'));
} finally {
  await browser.close();
  sim.kill('SIGTERM');
  rmSync(configDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
