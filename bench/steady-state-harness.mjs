// The shared core harness (../shared/bench/core-cost.mjs) as a server would see it: the same file with
// each segment's receiver kept alive to the end of the run.
//
// Why: the harness makes a fresh receiver (and floor) per segment and collects the heap between
// segments, so the receivers before are gone. V8 then discards the optimized code that depended on
// them (the hidden classes of their objects die with them, and so do functions made per receiver) and
// compiles the delivery path again on its background threads, which counts as the process's CPU time:
// `--trace-opt` shows the core's hot functions compiled once per segment. A server keeps its one
// receiver. The copy is an experiment beside the harness, never a replacement for it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MADE = '  const w = createWebhooks({ secret: SECRET });\n';
const KEPT = `${MADE}  (globalThis.keptReceivers ??= []).push(w);\n`;

/** Write the steady-state copy of the harness at `harness` and return its path. */
export function steadyStateHarness(harness) {
  const code = readFileSync(harness, 'utf8');
  if (!code.includes(MADE))
    throw new Error(`The harness no longer makes its receiver as expected: ${harness}`);
  const dir = join(tmpdir(), 'service-webhooks-steady-state');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'core-cost-receivers-kept.mjs');
  writeFileSync(file, code.replace(MADE, KEPT));
  return file;
}
