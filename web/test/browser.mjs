// The headset path end to end: a headless armsim serving the page over HTTPS with its generated
// certificate, Debian's chromium driven by playwright-core, IWER emulating a Quest 3 and its
// controllers. A desktop page is opened first, only to look: it watches (the arm stays free) and
// its desktop view's pixels must show the arm and the three cubes. Then the headset page opens,
// also watching, enters the immersive session (which asks for the arm: it gets it), STARTs,
// holds squeeze, moves the right controller 10 cm, and the test checks through the state frames
// that the end effector moved about 10 cm in the direction the scene's anchor maps it to, that a
// jump over 6 cm releases the clutch and that a right-hand pinch (IWER hand tracking) holds it.
// Meanwhile the desktop page stays an observer: its HUD says another client holds the arm and
// its take-control button changes nothing. When the headset leaves, the desktop page (which
// asked only to watch) is not handed the arm; ticking Teleop asks for it, and it STARTs and
// drives the arm with the mouse (Space held). It prints the control -> state latency (p50, p99)
// and the page's control rate.
//
// Environment: ARMSIM_BIN (default ../target/debug/armsim), CHROMIUM (default /usr/bin/chromium),
// ARMSIM_WEB_OUT (where the screenshot goes; default web/test-results).

import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { launchChromium, startArmsim } from './harness.mjs';
import { frames, transformVector, xrToAnchor } from '../app/mapping.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const bin = process.env.ARMSIM_BIN ?? path.join(root, 'target/debug/armsim');
const chromePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const outDir = process.env.ARMSIM_WEB_OUT ?? path.join(root, 'web/test-results');
const KEY = 'browser-test-key';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Waits until the page `p` holds a state frame stamped `secs` of sim time after the one it holds
// now (240 steps a second). What the arm does is waited for in sim time, never in wall time: on a
// loaded machine the real-time run falls behind the wall clock.
const simSleep = async (p, secs) => {
  const from = await p.evaluate(() => window.armsim.client.state.extensions.step);
  await p.waitForFunction((until) => window.armsim.client.state.extensions.step >= until,
    from + Math.round(secs * 240), { timeout: 60000 });
};
const t0 = Date.now();
const log = (...a) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1)} s]`, ...a);

const { sim, url, configDir, log: armsimLog } = await startArmsim({ bin, scene: path.join(root, 'assets/scenes/default_scene.json'), key: KEY });
log('armsim serves', url);

const browser = await launchChromium(chromePath, configDir);
let failed = false;
try {
  const iwer = readFileSync(path.join(here, '../node_modules/iwer/build/iwer.js'), 'utf8');
  // Small windows: chromium renders in software here, and every frame is a control frame.
  const headset = await browser.newContext({ viewport: { width: 480, height: 320 } });
  await headset.addInitScript({ content: iwer });
  await headset.addInitScript(() => {
    const device = new IWER.XRDevice(IWER.metaQuest3);
    device.installRuntime({ forceInstall: true });
    window.__device = device;
  });
  // A desktop page opened first, only to look (a plain desktop browser context): it watches,
  // and the arm stays free for whoever starts to drive.
  const observer = await (await browser.newContext({ viewport: { width: 800, height: 500 } })).newPage();
  observer.on('pageerror', (e) => log('desktop page error:', e.message));
  await observer.goto(url);
  await observer.waitForFunction(() => window.armsim?.client?.role === 'observer' && window.armsim.client.state
    && window.armsim.client.holder() === 'nobody', null, { timeout: 30000 });
  assert.match(await observer.evaluate(() => document.getElementById('arm').textContent), /arm: nobody/);
  log('desktop page: observer, the arm free');

  // The desktop view: the arm (orange links) and the three cubes must be in the picture.
  mkdirSync(outDir, { recursive: true });
  await observer.waitForTimeout(500);
  await observer.screenshot({ path: path.join(outDir, 'desktop.png') });
  const counts = await observer.evaluate(() => {
    const src = document.querySelector('#view canvas');
    const c = document.createElement('canvas');
    c.width = src.width;
    c.height = src.height;
    const g = c.getContext('2d');
    g.drawImage(src, 0, 0);
    const px = g.getImageData(0, 0, c.width, c.height).data;
    const n = { red: 0, orange: 0, green: 0, blue: 0 };
    for (let i = 0; i < px.length; i += 4) {
      const [r, gr, b] = [px[i], px[i + 1], px[i + 2]];
      const max = Math.max(r, gr, b);
      const min = Math.min(r, gr, b);
      if (max < 90 || (max - min) / max < 0.45) continue;
      let h = max === r ? ((gr - b) / (max - min)) * 60 : max === gr ? (2 + (b - r) / (max - min)) * 60 : (4 + (r - gr) / (max - min)) * 60;
      if (h < 0) h += 360;
      if (h < 15 || h > 345) n.red++;
      else if (h >= 22 && h <= 45) n.orange++;
      else if (h >= 95 && h <= 150) n.green++;
      else if (h >= 212 && h <= 245) n.blue++;
    }
    return n;
  });
  log('desktop view pixels by colour', counts);
  for (const [what, n] of Object.entries(counts)) {
    assert.ok(n >= 40, `the desktop view shows the ${what === 'orange' ? 'arm' : `${what} cube`} (${n} pixels)`);
  }

  const fps = async (p) => {
    const a = await p.evaluate(() => window.armsim.renderedFrames());
    await sleep(2000);
    return ((await p.evaluate(() => window.armsim.renderedFrames())) - a) / 2;
  };
  // The headset page, opened next: it watches too until it enters XR.
  const page = await headset.newPage();
  page.on('pageerror', (e) => log('page error:', e.message));
  // A quarter of the Quest's resolution: chromium renders in software here.
  await page.goto(`${url}&scale=0.25`);
  await page.waitForFunction(() => window.armsim?.client?.role === 'observer' && window.armsim.client.state, null, { timeout: 30000 });
  log('headset page: observer, state frames arriving; XR mode', await page.evaluate(() => window.armsim.xrMode));
  log('frames/s: headset page', await fps(page), 'observer', await fps(observer));
  // Entering the immersive session asks for the arm, which is free: the headset gets it; START.
  await page.click('#xr');
  await page.waitForFunction(() => window.armsim.presenting() && window.armsim.client.role === 'controller', null, { timeout: 15000 });
  // IWER's canvas covers the page while presenting, so the Start button gets its click directly
  // (in a headset the panel's START does the same).
  await page.evaluate(() => document.getElementById('start').click());
  await page.waitForFunction(() => window.armsim.client.simState === 'RUNNING', null, { timeout: 10000 });
  log('immersive session running, the headset controls; frames/s', await fps(page));
  // The desktop page: another client holds the arm, and its take-control button changes nothing.
  await observer.waitForFunction(() => window.armsim.client.holder() === 'another client'
    && document.getElementById('control').textContent === 'Arm held by another client', null, { timeout: 10000 });
  await observer.click('#control');
  await observer.waitForFunction(() => window.armsim.client.activeAlerts().some((a) => a.startsWith('CONTROL_BUSY')), null, { timeout: 10000 });
  assert.equal(await observer.evaluate(() => window.armsim.client.role), 'observer');
  assert.equal(await page.evaluate(() => window.armsim.client.role), 'controller', 'the headset kept the arm');
  log('desktop page: "Arm held by another client"; its take-control press was refused (CONTROL_BUSY)');
  const info = await page.evaluate(() => window.armsim.info);
  const ee = () => page.evaluate(() => window.armsim.client.state.ee_pos_m);

  await page.evaluate(() => window.__device.controllers.right.updateButtonValue('squeeze', 1));
  await page.waitForFunction(() => window.armsim.control.clutch, null, { timeout: 5000 });
  await simSleep(page, 0.5);
  const before = await ee();
  const start = await page.evaluate(() => window.__device.controllers.right.position.toArray?.() ?? [
    window.__device.controllers.right.position.x, window.__device.controllers.right.position.y,
    window.__device.controllers.right.position.z]);
  // 10 cm to the operator's right (XR +X), in 5 mm steps: under the 6 cm jump guard.
  const moveXr = [0.1, 0, 0];
  for (let i = 1; i <= 20; i++) {
    await page.evaluate(([x, y, z]) => window.__device.controllers.right.position.set(x, y, z),
      [start[0] + (moveXr[0] * i) / 20, start[1] + (moveXr[1] * i) / 20, start[2] + (moveXr[2] * i) / 20]);
    await sleep(25);
  }
  await simSleep(page, 2.5);
  const after = await ee();
  assert.ok(await page.evaluate(() => window.armsim.control.clutch), 'the clutch held through the move');
  const expected = transformVector(frames(info.t_sim_from_vp_anchor).t, xrToAnchor(moveXr));
  const moved = after.map((v, i) => v - before[i]);
  const err = Math.hypot(...moved.map((v, i) => v - expected[i]));
  log('end effector moved', moved.map((v) => v.toFixed(4)), 'expected', expected, `error ${(err * 100).toFixed(1)} cm`);
  assert.ok(err < 0.025, `the end effector follows the controller: moved ${moved}, expected ${expected}`);

  // The observer saw it, and watched all along.
  const seen = await observer.evaluate(() => window.armsim.client.state.ee_pos_m);
  assert.ok(Math.hypot(...seen.map((v, i) => v - after[i])) < 0.02, `observer sees the arm: ${seen} vs ${after}`);
  assert.equal(await observer.evaluate(() => window.armsim.client.role), 'observer', 'the desktop page stays an observer');

  // A jump of more than 6 cm in one frame releases the clutch.
  await page.evaluate(([x, y, z]) => window.__device.controllers.right.position.set(x, y, z),
    [start[0] + 0.3, start[1], start[2]]);
  await page.waitForFunction(() => !window.armsim.control.clutch && window.armsim.control.released === 'jump', null, { timeout: 5000 });
  await page.waitForFunction(() => document.getElementById('alerts').textContent.includes('clutch released'), null, { timeout: 5000 });
  log('a 20 cm jump released the clutch, and the HUD says so');

  const stats = await page.evaluate(() => window.armsim.stats());

  // Hand tracking: the right hand's pinch is the clutch.
  await page.evaluate(() => {
    window.__device.controllers.right.updateButtonValue('squeeze', 0);
    window.__device.primaryInputMode = 'hand';
  });
  await page.waitForFunction(() => !window.armsim.control.clutch, null, { timeout: 5000 });
  await page.evaluate(() => window.__device.hands.right.updatePinchValue(1));
  await page.waitForFunction(() => window.armsim.control.clutch, null, { timeout: 5000 });
  await page.evaluate(() => window.__device.hands.right.updatePinchValue(0));
  await page.waitForFunction(() => !window.armsim.control.clutch, null, { timeout: 5000 });
  log('a right-hand pinch holds the clutch, opening the hand lets go');

  // The headset leaves: the desktop page asked only to watch, so it is not handed the arm.
  // Ticking Teleop asks for it; the page STARTs and drives from the desktop view with the mouse
  // (Space held as the clutch).
  await page.close();
  await observer.waitForFunction(() => window.armsim.client.holder() === 'nobody', null, { timeout: 10000 });
  await simSleep(observer, 1.0);
  assert.equal(await observer.evaluate(() => window.armsim.client.role), 'observer', 'a watching page was handed the arm');
  await observer.check('#teleop');
  await observer.waitForFunction(() => window.armsim.client.role === 'controller', null, { timeout: 10000 });
  log('headset gone: the desktop page was not promoted; ticking Teleop took the free arm');
  await observer.click('#start');
  await observer.waitForFunction(() => window.armsim.client.simState === 'RUNNING', null, { timeout: 10000 });
  const [cx, cy] = [500, 300];
  await observer.mouse.move(cx, cy);
  await observer.waitForTimeout(300);
  await observer.keyboard.down('Space');
  await observer.waitForFunction(() => window.armsim.control.clutch, null, { timeout: 5000 });
  const deskBefore = await observer.evaluate(() => window.armsim.client.state.ee_pos_m);
  for (let i = 1; i <= 15; i++) {
    await observer.mouse.move(cx + i * 4, cy);
    await sleep(60);
  }
  await simSleep(observer, 2.0);
  const deskAfter = await observer.evaluate(() => window.armsim.client.state.ee_pos_m);
  await observer.keyboard.up('Space');
  const deskMoved = Math.hypot(...deskAfter.map((v, i) => v - deskBefore[i]));
  log(`desktop teleop: the desktop page moved the end effector ${(deskMoved * 100).toFixed(1)} cm with the mouse`);
  assert.ok(deskMoved > 0.03, `the mouse drives the arm from the desktop view (${deskMoved} m)`);
  const fmt = (v) => (v == null ? 'n/a' : v.toFixed(1));
  console.log(`latency control frame -> state frame: p50 ${fmt(stats.p50_ms)} ms, p99 ${fmt(stats.p99_ms)} ms over ${stats.n} frames; page control rate ${fmt(stats.control_hz)} Hz`);
  assert.ok(stats.n > 20, 'latency samples were taken');
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
