// What the browser tests share: a headless armsim serving the headset page on free ports (its
// generated certificate in a fresh config folder), and Debian's chromium trusting exactly that
// certificate's public key.

import { spawn } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

// Starts `bin --headless --scene scene` with the pairing key `key` and waits (60 s at most) for
// the page URL it logs. `configDir` may be given (a folder the test already wrote into).
// Returns the process, the URL, the config folder and the log so far (`log()`).
export async function startArmsim({ bin, scene, key, configDir }) {
  const dir = configDir ?? mkdtempSync(path.join(tmpdir(), 'armsim-web-'));
  const sim = spawn(bin, [
    '--headless', '--scene', scene,
    '--teleop-port', '0', '--xr-port', '0', '--xr-key', key, '--no-agent-ports',
  ], { env: { ...process.env, ARMSIM_CONFIG_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let simLog = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`armsim logged no page URL in 60 s:\n${simLog}`)), 60000);
    const onData = (d) => {
      simLog += d;
      const m = simLog.match(/headset page: (https:\/\/\S+\?key=\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    sim.stdout.on('data', onData);
    sim.stderr.on('data', onData);
    sim.on('exit', (code) => reject(new Error(`armsim exited (${code}):\n${simLog}`)));
  });
  return { sim, url, configDir: dir, log: () => simLog };
}

// Chromium, headless with SwiftShader's WebGL, trusting exactly armsim's certificate (its public
// key in `configDir`), not every certificate.
export async function launchChromium(chromePath, configDir) {
  const cert = new X509Certificate(readFileSync(path.join(configDir, 'xr-cert.pem')));
  const spki = createHash('sha256').update(cert.publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
  return chromium.launch({
    executablePath: chromePath,
    args: [
      '--headless', '--no-sandbox', '--use-gl=swiftshader', '--enable-unsafe-swiftshader',
      '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', `--ignore-certificate-errors-spki-list=${spki}`,
    ],
  });
}
