// The embedded default for a bench: `exe --http` on a random loopback port with a fresh KV root
// (`kvPrefix` names its temp folder), waited for until /health answers (up to a minute).
// `stop()` ends it (SIGINT) and removes its KV root.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

export async function startEmbedded(exe, kvPrefix = '/tmp/bench-kv-', flags = []) {
  const port = 18000 + Math.floor(Math.random() * 1000);
  const kv = fs.mkdtempSync(kvPrefix);
  const p = spawn(exe, ['--http', `127.0.0.1:${port}`, '--log-level', 'warn', '--kv-root', kv, ...flags], { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; ++i) {
    try { if ((await fetch(base + '/health')).ok) break; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, stop: async () => { p.kill('SIGINT'); await new Promise((r) => p.on('exit', r)); fs.rmSync(kv, { recursive: true, force: true }); } };
}
