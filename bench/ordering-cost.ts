/**
 * Section 1g: what the `ordering` option (issue 47) adds to a delivery, side by side with the same
 * receiver without it, `user.created` ~300 B events whose resources (`user:usr_N`) cycle over 1,000:
 * - MemoryStore: CPU µs per delivery, by the method of section 1c (fresh fixtures, event-loop turns,
 *   A-B-B-A rounds), unguarded, `serialize` and `latest`;
 * - RedisStore (BENCH_REDIS_URL, by default 127.0.0.1:6379, keys under a prefix of this run's own,
 *   deleted afterwards): round trips per delivery (commands the store's ioredis client sent, counted
 *   on the client, for a run of sequential deliveries: without pipelining each is one round trip), and
 *   deliveries/s with 64 in flight in this process, unguarded against `latest`, A-B-B-A rounds.
 *
 * BENCH_QUICK=1 measures each once, briefly. Run alone:
 * `npx tsx --tsconfig bench/tsconfig.json bench/ordering-cost.ts` after `npm run build`.
 */
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { REDIS_URL } from './inbox-engines.js';
import { type Fixture, type Library, sideBySide, type Variant } from './server-cost.js';
import { median, QUICK, runNonce, SECRET, sign } from './shared.js';

const ROUNDS = QUICK ? 1 : 9;
const RESOURCES = 1_000;
/** Deliveries in flight at once in the deliveries/s runs: different resources, as a busy sender sends. */
const IN_FLIGHT = 64;
const THROUGHPUT_DELIVERIES = QUICK ? 500 : 5_000;
const ROUND_TRIP_DELIVERIES = QUICK ? 50 : 500;

export type OrderingVariant = 'unguarded' | 'serialize' | 'latest';

export interface OrderingCostResult {
  readonly memory: {
    /** Median CPU µs per delivery, per variant. */
    readonly micros: Readonly<Record<OrderingVariant, number>>;
    /** Median over rounds of (guarded − unguarded), CPU µs. */
    readonly addedMicros: Readonly<Record<'serialize' | 'latest', number>>;
    readonly rounds: number;
  };
  readonly redis:
    | {
        /** Commands the store sent per delivery, per variant. */
        readonly roundTrips: Readonly<Record<'unguarded' | 'latest', number>>;
        /** Median deliveries/s over rounds, per variant. */
        readonly perSecond: Readonly<Record<'unguarded' | 'latest', number>>;
        /** Median over rounds of latest/unguarded deliveries/s. */
        readonly ratio: number;
        readonly rounds: number;
      }
    | { readonly skipped: string };
}

let delivered = 0;
/** `count` fresh signed `user.created` events, their resources cycling over {@link RESOURCES}. */
function fixtures(count: number): Fixture[] {
  const nonce = runNonce();
  const created = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, () => {
    const n = delivered++;
    const text = `{"id":"evt_${nonce}_${n}","type":"user.created","created":${created},"livemode":true,"pending_webhooks":1,"request":{"id":"req_${n}"},"data":{"object":"user","id":"usr_${n % RESOURCES}","name":"Ada Lovelace","email":"ada@example.com"}}`;
    const body = Buffer.from(text, 'utf8');
    return {
      body,
      headers: {
        host: '127.0.0.1:3000',
        'content-type': 'application/json',
        'content-length': String(body.byteLength),
        'x-service-signature': sign(body),
      },
    };
  });
}

type Store = NonNullable<Parameters<Library['createWebhooks']>[0]['store']>;

function receiver(library: Library, store: () => Store, mode: OrderingVariant) {
  const webhooks = library.createWebhooks({
    secret: SECRET,
    store: store(),
    ...(mode === 'unguarded' ? {} : { ordering: { 'user.*': mode } }),
  });
  webhooks.on('user.created', async () => {});
  return async (fixture: Fixture) =>
    (await webhooks.handle({ body: fixture.body, headers: fixture.headers })).status;
}

async function memoryCost(
  library: Library,
  log: (line: string) => void,
): Promise<OrderingCostResult['memory']> {
  const variant =
    (mode: OrderingVariant): Variant =>
    () =>
      receiver(library, () => new library.MemoryStore(), mode);
  const modes = ['unguarded', 'serialize', 'latest'] as const;
  const samples = await sideBySide(
    modes.map((mode) => [mode, variant(mode)] as const),
    fixtures,
    ROUNDS,
  );
  const micros = Object.fromEntries(modes.map((mode) => [mode, median(samples.get(mode)!)])) as Record<
    OrderingVariant,
    number
  >;
  const unguarded = samples.get('unguarded')!;
  const added = (mode: 'serialize' | 'latest') =>
    median(samples.get(mode)!.map((value, i) => value - unguarded[i]!));
  const addedMicros = { serialize: added('serialize'), latest: added('latest') };
  log(
    `  MemoryStore: unguarded ${micros.unguarded.toFixed(2)}, serialize ${micros.serialize.toFixed(2)} (+${addedMicros.serialize.toFixed(2)}), latest ${micros.latest.toFixed(2)} (+${addedMicros.latest.toFixed(2)}) CPU µs per delivery`,
  );
  return { micros, addedMicros, rounds: ROUNDS };
}

/** The store's client, counting the commands it sends. */
function countingClient(): { client: Redis; sent: () => number } {
  const client = new Redis(REDIS_URL, {
    enableOfflineQueue: false,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
  });
  let sent = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    sent++;
    return send(...args);
  }) as Redis['sendCommand'];
  return { client, sent: () => sent };
}

async function redisCost(
  library: Library,
  log: (line: string) => void,
): Promise<OrderingCostResult['redis']> {
  const { RedisStore } = (await import('service-webhooks/redis')) as typeof import('service-webhooks/redis');
  const { client, sent } = countingClient();
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    return { skipped: `no Redis at ${REDIS_URL} (${String(error)})` };
  }
  const prefix = `bench-ordering-${runNonce()}:`;
  const store = () => new RedisStore({ client, prefix }) as unknown as Store;
  const modes = ['unguarded', 'latest'] as const;
  const receivers = Object.fromEntries(modes.map((mode) => [mode, receiver(library, store, mode)])) as Record<
    (typeof modes)[number],
    (fixture: Fixture) => Promise<number>
  >;
  try {
    const roundTrips = {} as Record<(typeof modes)[number], number>;
    for (const mode of modes) {
      const list = fixtures(ROUND_TRIP_DELIVERIES);
      const before = sent();
      for (const fixture of list) {
        const status = await receivers[mode](fixture);
        if (status !== 200) throw new Error(`A delivery was answered ${status}.`);
      }
      roundTrips[mode] = (sent() - before) / list.length;
    }
    const samples = { unguarded: [] as number[], latest: [] as number[] };
    const measure = async (mode: (typeof modes)[number]) => {
      const list = fixtures(THROUGHPUT_DELIVERIES);
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < list.length) {
            const status = await receivers[mode](list[next++]!);
            if (status !== 200) throw new Error(`A delivery was answered ${status}.`);
          }
        }),
      );
      samples[mode].push(list.length / ((performance.now() - started) / 1000));
    };
    for (const mode of modes) await measure(mode); // warm-up, not kept
    samples.unguarded.length = 0;
    samples.latest.length = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const order =
        round % 2 === 0
          ? ['unguarded', 'latest', 'latest', 'unguarded']
          : ['latest', 'unguarded', 'unguarded', 'latest'];
      for (const mode of order as (typeof modes)[number][]) await measure(mode);
    }
    const perSecond = { unguarded: median(samples.unguarded), latest: median(samples.latest) };
    const ratio = median(samples.latest.map((value, i) => value / samples.unguarded[i]!));
    log(
      `  RedisStore: ${roundTrips.unguarded.toFixed(2)} vs ${roundTrips.latest.toFixed(2)} round trips per delivery (unguarded vs latest); ${Math.round(perSecond.unguarded)} vs ${Math.round(perSecond.latest)} deliveries/s with ${IN_FLIGHT} in flight (${ratio.toFixed(2)}×)`,
    );
    return { roundTrips, perSecond, ratio, rounds: ROUNDS };
  } finally {
    const keys: string[] = [];
    for await (const batch of client.scanStream({ match: `${prefix}*`, count: 1_000 }))
      keys.push(...(batch as string[]));
    for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
    client.disconnect();
  }
}

export async function runOrderingCost(log: (line: string) => void): Promise<OrderingCostResult> {
  const library = (await import('service-webhooks')) as Library;
  const memory = await memoryCost(library, log);
  const redis = await redisCost(library, log);
  return { memory, redis };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const json = process.argv.includes('--json');
  const result = await runOrderingCost((line) => (json ? console.error(line) : console.log(line)));
  if (json) console.log(JSON.stringify(result));
}
