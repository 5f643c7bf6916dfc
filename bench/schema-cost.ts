/**
 * Section 1f: what `schemas` adds to a delivery (issue 34), as a server pays it (the method of section
 * 1c: CPU time, fresh fixtures and receiver per segment, event-loop turns), side by side with the same
 * receiver without schemas: the first-party schemas (`service-webhooks/schemas`, target ≤ 1 µs at
 * 300 B) and a zod 4 schema of the same rules. 300 B and 4 KiB `user.created` bodies.
 *
 * Run alone: `npx tsx --tsconfig bench/tsconfig.json bench/schema-cost.ts` after `npm run build`.
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { type Fixture, type Library, sideBySide, type Variant } from './server-cost.js';
import { deliveries, median, QUICK, SECRET } from './shared.js';

const ROUNDS = QUICK ? 2 : 9;
export const SCHEMA_COST_SIZES = [300, 4096] as const;

export interface SchemaCostRow {
  readonly size: number;
  readonly schema: 'first-party' | 'zod';
  /** Median over rounds of (with the schema − without), CPU µs per delivery. */
  readonly addedMicros: number;
  readonly withoutMicros: number;
  readonly withMicros: number;
  readonly rounds: number;
}

/** The first-party schema's rules for `user.created`, in zod: what a user would write. */
const zodUserCreated = z
  .object({
    id: z.string().min(1),
    type: z.literal('user.created'),
    created: z.number().int(),
    livemode: z.boolean(),
    pending_webhooks: z.number().int().min(0).optional(),
    request: z.object({ id: z.string().nullable() }).loose().nullable().optional(),
    data: z
      .object({ object: z.literal('user'), id: z.string().min(1), name: z.string(), email: z.email() })
      .loose(),
  })
  .loose();

function fixturesOf(size: number): (count: number) => Fixture[] {
  return (count) =>
    deliveries(size, count).map(({ body, signature }) => ({
      body,
      headers: {
        host: '127.0.0.1:3000',
        'content-type': 'application/json',
        'content-length': String(body.byteLength),
        'x-service-signature': signature,
      },
    }));
}

function receiver(library: Library, schemas: Parameters<Library['createWebhooks']>[0]['schemas']): Variant {
  return () => {
    const webhooks = library.createWebhooks({
      secret: SECRET,
      store: new library.MemoryStore(),
      ...(schemas ? { schemas } : {}),
    });
    webhooks.on('user.created', async () => {});
    return async (fixture) =>
      (await webhooks.handle({ body: fixture.body, headers: fixture.headers })).status;
  };
}

export async function runSchemaCost(log: (line: string) => void): Promise<SchemaCostRow[]> {
  const library = (await import('service-webhooks')) as Library;
  const { eventSchemas } = await import('service-webhooks/schemas');
  const schemas = [
    ['first-party', receiver(library, eventSchemas)],
    ['zod', receiver(library, { 'user.created': zodUserCreated })],
  ] as const;
  // The smoke run (BENCH_QUICK=1) measures one row: the first-party schemas at 300 B, the targeted one.
  const measured = QUICK ? schemas.slice(0, 1) : schemas;
  const variants = [['without', receiver(library, undefined)] as const, ...measured];
  const rows: SchemaCostRow[] = [];
  for (const size of QUICK ? [SCHEMA_COST_SIZES[0]] : SCHEMA_COST_SIZES) {
    const samples = await sideBySide(variants, fixturesOf(size), ROUNDS);
    const without = samples.get('without')!;
    for (const [schema] of measured) {
      const withSchema = samples.get(schema)!;
      const row: SchemaCostRow = {
        size,
        schema,
        addedMicros: median(withSchema.map((value, i) => value - without[i]!)),
        withoutMicros: median(without),
        withMicros: median(withSchema),
        rounds: ROUNDS,
      };
      rows.push(row);
      log(
        `  ${schema}, ${size} B: ${row.addedMicros >= 0 ? '+' : ''}${row.addedMicros.toFixed(2)} CPU µs per delivery (${row.withMicros.toFixed(2)} vs ${row.withoutMicros.toFixed(2)} µs)`,
      );
    }
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const json = process.argv.includes('--json');
  const rows = await runSchemaCost((line) => (json ? console.error(line) : console.log(line)));
  if (json) console.log(JSON.stringify(rows));
}
