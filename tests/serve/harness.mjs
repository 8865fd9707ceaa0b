// What the serve tests share: a free loopback port, named checks that record pass / fail and
// keep going, so one run reports every broken behaviour, and waits on a state with a deadline.
import net from 'node:net';

export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

export const results = [];

export async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push([name, true]);
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push([name, false]);
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

/// Polls `probe` every `everyMs` until it returns a truthy value; returns the ms that took, or
/// throws naming `what` after `deadlineMs` (with `probe`'s last value and `explain()` if given).
/// Deadlines only bound a broken run: size them for a loaded 2-core machine, never for speed.
export async function waitFor(what, probe, { deadlineMs = 60000, everyMs = 20, explain } = {}) {
  const t0 = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - t0;
    if (Date.now() - t0 > deadlineMs)
      throw new Error(`no ${what} within ${deadlineMs / 1000} s` + (explain ? `:\n${await explain()}` : ''));
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/// Stops the servers a test started (SIGINT, then SIGKILL after 8 s), prints the last warnings
/// and errors of `logPath` when a check failed, the tally, runs `cleanup`, and exits with the
/// verdict.
export async function finish(procs, logPath, cleanup = () => {}) {
  for (const p of procs) p.kill('SIGINT');
  await Promise.all(procs.map((p) => new Promise((r) => {
    if (p.exitCode !== null) r();
    else { p.on('exit', r); setTimeout(() => { p.kill('SIGKILL'); r(); }, 8000); }
  })));
  const failed = results.filter(([, ok]) => !ok).length;
  if (failed && logPath) {
    const fs = await import('node:fs');
    console.log(fs.readFileSync(logPath, 'utf8').split('\n').filter((l) => /warn|error|crit/.test(l)).slice(-30).join('\n'));
  }
  console.log(`${results.length - failed}/${results.length} passed`);
  cleanup();
  process.exit(failed ? 1 : 0);
}
