// One cold-start sample, run as a fresh `node sample.mjs <bundle> <event.json>` process: the time and
// CPU from importing the bundled function to the answer of its first invocation, as Lambda's
// init phase plus first invoke would see them (Node's own start-up, the same for every function, is
// left out). Prints one JSON line; the event file is read before the clock starts.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [bundle, eventFile] = process.argv.slice(2);
const event = JSON.parse(readFileSync(eventFile, 'utf8'));
const deadline = Date.now() + 30_000;
const context = { getRemainingTimeInMillis: () => deadline - Date.now() };

// Not performance.now(): on Node the global `performance` is made on first use by loading perf_hooks
// (about 0.5 ms), so reading it here would load it before the clock starts and hide that cost from
// every function that loads it; Lambda's runtime does not load it.
const clock = () => Number(process.hrtime.bigint()) / 1e6;
const cpuBefore = process.cpuUsage();
const started = clock();
const { handler } = await import(pathToFileURL(bundle).href);
const imported = clock();
const result = await handler(event, context);
const answered = clock();
const cpu = process.cpuUsage(cpuBefore);

process.stdout.write(
  `${JSON.stringify({
    status: result.statusCode,
    importMs: imported - started,
    deliveryMs: answered - imported,
    totalMs: answered - started,
    cpuMs: (cpu.user + cpu.system) / 1000,
  })}\n`,
);
// The function's timers (deadlines, lease renewals) would keep a plain process alive; Lambda freezes it.
process.exit(0);
