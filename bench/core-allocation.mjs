// Bytes allocated per delivery by the core and by the hand-written floor of ../shared/bench/core-cost.mjs,
// side by side in one process: the growth of heapUsed over N deliveries (default 5,000) with no GC in
// between (a GC observer repeats any measure a collection ran in), the median of REPS (default 3).
//
//   npm run build && node --max-semi-space-size=128 --min-semi-space-size=128 bench/core-allocation.mjs
//
// A young generation of 128 MiB leaves room for a measure without a scavenge. PROJECTS is a comma-separated
// list of project directories whose dist/ builds are measured side by side (default: the current
// directory), SIZE the body size (default 300), FILL=0 measures a fresh receiver whose store is still
// growing instead of one whose dedup records are at their bound (100,000 ids, one out per id in), which
// is what a long-lived server sees. The deliveries, the floor and the event-loop turns are the shared
// harness's.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const PROJECTS = (process.env.PROJECTS || process.cwd()).split(',').map((p) => resolve(p));
const { LRUCache } = createRequire(join(PROJECTS[0], 'package.json'))('lru-cache');
const cores = [];
for (const p of PROJECTS)
  cores.push((await import(pathToFileURL(join(p, 'dist', 'index.js')).href)).createWebhooks);
const SECRET = 'whsec_perf';
const SIZE = Number(process.env.SIZE || 300);
const N = Number(process.env.N || 5000);
const REPS = Number(process.env.REPS || 3);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
let gcs = 0;
new PerformanceObserver((list) => {
  gcs += list.getEntries().length;
}).observe({ entryTypes: ['gc'] });

let seq = 0;
function body(i) {
  seq += 1;
  const now = Math.floor(Date.now() / 1000);
  const e = {
    id: `evt_perf_${i}_${seq}_${Math.random().toString(36).slice(2, 10)}`,
    type: 'user.created',
    created: now,
    data: {
      object: 'user',
      id: `usr_${seq}`,
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      created_at: new Date().toISOString(),
    },
    livemode: false,
    pending_webhooks: 1,
    request: { id: `req_${seq}` },
  };
  const base = JSON.stringify({ ...e, pad: '' });
  return Buffer.from(JSON.stringify({ ...e, pad: 'x'.repeat(Math.max(0, SIZE - base.length)) }));
}
function make(n) {
  const key = createSecretKey(Buffer.from(SECRET));
  return Array.from({ length: n }, (_, i) => {
    const b = body(i);
    return {
      body: b,
      headers: {
        'content-type': 'application/json',
        'x-service-signature': `sha256=${createHmac('sha256', key).update(b).digest('hex')}`,
      },
    };
  });
}
function floor() {
  const key = createSecretKey(Buffer.from(SECRET));
  const seen = new LRUCache({ max: 100000, ttl: 86400000 });
  const handlers = { 'user.created': async () => {} };
  return async function floor(delivery) {
    const b = delivery.body,
      h = delivery.headers['x-service-signature'];
    if (typeof h !== 'string' || h.length !== 71 || !h.startsWith('sha256=')) return { status: 401 };
    const mac = createHmac('sha256', key).update(b).digest('hex');
    if (!timingSafeEqual(Buffer.from(mac, 'latin1'), Buffer.from(h.slice(7), 'latin1')))
      return { status: 401 };
    const e = JSON.parse(b.toString('utf8'));
    if (seen.has(e.id)) return { status: 200 };
    seen.set(e.id, 1);
    await handlers[e.type]?.(e);
    return { status: 200 };
  };
}
const sides = [['floor', floor()]];
cores.forEach((createWebhooks, i) => {
  const w = createWebhooks({ secret: SECRET });
  w.on('user.created', async () => {});
  sides.push([`core ${PROJECTS[i]}`, w.handle.bind(w)]);
});
async function deliver(fn, items) {
  const blocks = Math.max(1, Math.min(20, Math.floor(items.length / 100)));
  for (let k = 0; k < blocks; k++) {
    const end = Math.floor(((k + 1) * items.length) / blocks);
    for (let i = Math.floor((k * items.length) / blocks); i < end; i++) {
      const r = await fn(items[i]);
      if ((r.status ?? r.statusCode) !== 200) throw new Error('non-200');
    }
    await new Promise(setImmediate);
  }
}
// Fill both sides' dedup records to their bound first (100,000 ids), so what is measured is a full
// store's steady state (one id out per id in), not its arrays growing.
if (process.env.FILL !== '0')
  for (const [, fn] of sides) for (let k = 0; k < 21; k++) await deliver(fn, make(5000));
const results = new Map(sides.map(([name]) => [name, []]));
for (let rep = 0; rep <= REPS; rep++) {
  for (const [name, fn] of rep % 2 ? [...sides].reverse() : sides) {
    let warm = make(3000);
    await deliver(fn, warm);
    warm = null;
    const items = make(N);
    gc();
    gc();
    await new Promise((r) => setTimeout(r, 5));
    const g0 = gcs;
    const before = process.memoryUsage().heapUsed;
    await deliver(fn, items);
    const after = process.memoryUsage().heapUsed;
    await new Promise((r) => setTimeout(r, 5));
    if (gcs !== g0) {
      console.log(`${name}: a GC ran during the measure, repeated`);
      rep--;
      continue;
    }
    if (rep > 0) results.get(name).push((after - before) / N);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fl = median(results.get('floor'));
for (const [name, xs] of results)
  console.log(
    `${SIZE} B ${name}: ${median(xs).toFixed(0)} B/delivery (${xs.map((x) => x.toFixed(0)).join(' ')})${name === 'floor' ? '' : ` floor +${(median(xs) - fl).toFixed(0)}`}`,
  );
