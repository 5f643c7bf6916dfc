/**
 * The HTTP sections' load generator when `wrk` is installed (Debian's package `wrk`). autocannon, a
 * Node.js process on the other core, spent about 65 µs of CPU per request: on a quiet machine it ran
 * at 96% of its core and set the pace for every receiver, squeezing the req/s ratios towards 1×. wrk
 * reads each request whole from a file of pre-signed deliveries (wrk.lua), about 25 µs of CPU per
 * request, and stays at 35-50% of its core: the receivers set the pace again.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LoadGenerator, LoadResult, RunningServer } from './http.js';
import { LatencyHistogram } from './latency-histogram.js';
import { bodyTemplate, bodyText, eventId, PATH, runNonce, sign } from './shared.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** wrk's version line, or undefined when it is not installed (or BENCH_LOAD=autocannon). */
export function wrkVersion(): string | undefined {
  if (process.env.BENCH_LOAD === 'autocannon') return undefined;
  const result = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (result.error) return undefined;
  return /^wrk (\S+)/.exec(result.stdout)?.[1] ?? 'unknown version';
}

/**
 * A file of `count` complete HTTP requests, each a distinct signed delivery of `size` bytes, all the
 * same length so wrk finds request `n` at `n × length`. Written once per bench run; the ids are
 * distinct within the file, and each receiver process is sent every request at most once.
 */
class RequestFile {
  readonly path: string;
  readonly length: number;
  readonly count: number;

  constructor(size: number, count: number) {
    const nonce = runNonce();
    const template = bodyTemplate(size);
    mkdirSync(here('./.tmp'), { recursive: true });
    this.path = here(`./.tmp/wrk-requests-${nonce}.bin`);
    this.count = count;
    const format = (n: number): string => {
      const id = eventId(nonce, n);
      const body = bodyText(template, id);
      const signature = sign(body);
      // Host is the same for every port: Node requires the header, not a value.
      return `POST ${PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nUser-Agent: Service-Webhooks/1.0\r\nx-service-signature: ${signature}\r\nx-hub-signature-256: ${signature}\r\nx-github-event: push\r\nx-github-delivery: ${id}\r\nContent-Length: ${size}\r\n\r\n${body}`;
    };
    this.length = Buffer.byteLength(format(0));
    const fd = openSync(this.path, 'w');
    try {
      const batch = 1000;
      for (let start = 0; start < count; start += batch) {
        const requests: string[] = [];
        for (let n = start; n < Math.min(count, start + batch); n++) requests.push(format(n));
        const chunk = Buffer.from(requests.join(''));
        if (chunk.byteLength !== requests.length * this.length)
          throw new Error('Requests of different lengths: event ids must all be the same length.');
        writeSync(fd, chunk);
      }
    } finally {
      closeSync(fd);
    }
  }

  remove(): void {
    rmSync(this.path, { force: true });
  }
}

interface WrkReport {
  readonly requests: number;
  readonly durationMicros: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly sent: number;
  readonly repeated: number;
  readonly cpuMicros: number;
}

/** Load from one wrk process per run (one thread, as autocannon had one core), pinned like this process. */
export class WrkLoad implements LoadGenerator {
  readonly name: string;
  readonly #file: RequestFile;
  /** The next unsent request per receiver process: none is ever sent the same delivery twice. */
  readonly #next = new WeakMap<RunningServer, number>();

  /** `capacity`: how many requests one receiver process may be sent over a whole round. */
  constructor(version: string, size: number, capacity: number) {
    this.name = `wrk ${version}`;
    this.#file = new RequestFile(size, capacity);
  }

  async run(server: RunningServer, connections: number, seconds: number): Promise<LoadResult> {
    if (!Number.isInteger(seconds)) throw new Error(`wrk runs for whole seconds, not ${seconds}.`);
    const first = this.#next.get(server) ?? 0;
    const args = [
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      '--timeout',
      '30s',
      '-s',
      here('./wrk.lua'),
      `http://127.0.0.1:${server.port}${PATH}`,
      '--',
      this.#file.path,
      String(this.#file.length),
      String(first),
      String(Math.max(0, this.#file.count - first)),
    ];
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
      child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      child.once('error', reject);
      child.once('close', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`wrk exited with ${code}: ${stderr || stdout}`)),
      );
    });
    const lines = output.split('\n');
    const line = lines.find((text) => text.startsWith('BENCH_RESULT '));
    const histogram = lines.find((text) => text.startsWith('BENCH_LATENCY'));
    if (!line || histogram === undefined) throw new Error(`wrk printed no result:\n${output}`);
    const report = JSON.parse(line.slice('BENCH_RESULT '.length)) as WrkReport;
    const latency = new LatencyHistogram();
    for (const pair of histogram.slice('BENCH_LATENCY'.length).trim().split(' ')) {
      if (pair === '') continue;
      const [micros, count] = pair.split(':');
      latency.add(Number(micros), Number(count));
    }
    this.#next.set(server, first + report.sent);
    return {
      total: report.requests,
      seconds: report.durationMicros / 1e6,
      latency,
      non2xx: report.non2xx,
      // A repeated delivery is answered from the dedup store: a cheaper request, so a failed run.
      errors: report.errors + report.repeated,
      loadCpuMicros: report.cpuMicros,
    };
  }

  close(): void {
    this.#file.remove();
  }
}
