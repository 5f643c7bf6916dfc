/**
 * The ordering property test's scenarios and oracles, apart from any store or process.
 *
 * A scenario is a few resources, each with a history of events in the order the service made them
 * (a `created`, updates, perhaps a `deleted`), and a schedule: every event sent one to three times,
 * the copies in a random order, each copy given to one of the test's workers (several per process),
 * which deliver their share one after another while the others do theirs, retrying every answer but
 * 200 as the sender does. fast-check draws both and shrinks a failing one.
 *
 * The histories are built so that the newest event is known without the guard's own code: `created`
 * seconds strictly increase between updates, a `created` and the first update may share a second (the
 * tie the lifecycle breaks: a creation before an update), and a deletion may carry any second at or
 * after the creation (a deleted resource stays deleted, so it is the newest whatever its second).
 *
 * The oracles read the handler log (./handler-log.ts): no two handler runs of one resource overlapped;
 * under `latest`, no run started after a run of a newer event of its resource, each event ran at most
 * once, and the state left is the newest event's; under `serialize`, each event ran exactly once.
 */
import fc from 'fast-check';

export type OrderingModeUnderTest = 'latest' | 'serialize';

/** The object each mode is tested on: the receiver under test maps `user.*` and `project.*` so. */
export const OBJECT_OF: Record<OrderingModeUnderTest, 'user' | 'project'> = {
  latest: 'user',
  serialize: 'project',
};

export interface ScenarioEvent {
  readonly id: string;
  readonly type: string;
  readonly created: number;
  readonly data: { readonly object: string; readonly id: string; readonly version: number };
}

export interface ResourceHistory {
  readonly mode: OrderingModeUnderTest;
  /** `object:id`, as the log and the core name it. */
  readonly resource: string;
  /** In the order the service made them: the last is the newest. */
  readonly events: readonly ScenarioEvent[];
}

export interface Scenario {
  readonly histories: readonly ResourceHistory[];
  /** Per worker, the events it delivers in order (copies of one event may go to several workers). */
  readonly queues: readonly (readonly ScenarioEvent[])[];
}

/**
 * Where an event stands in its resource's history, by the rule the ordering guide states (and
 * computed here without the core's code): `created` seconds, then the lifecycle rank within the second
 * (created 0, anything else 1), and a deletion above everything.
 */
export function expectedPosition(event: Pick<ScenarioEvent, 'type' | 'created'>): number {
  if (event.type.endsWith('.deleted')) return Number.MAX_SAFE_INTEGER;
  return event.created * 2 + (event.type.endsWith('.created') ? 0 : 1);
}

interface HistoryShape {
  readonly mode: OrderingModeUnderTest;
  readonly updates: number;
  /** The first update shares the creation's second. */
  readonly tie: boolean;
  /** Seconds between updates, each at least one. */
  readonly gaps: readonly number[];
  /** Seconds from the creation to the deletion, or none. */
  readonly deletedAfter: number | null;
}

const historyShape: fc.Arbitrary<HistoryShape> = fc
  .record({
    mode: fc.constantFrom<OrderingModeUnderTest>('latest', 'serialize'),
    updates: fc.integer({ min: 1, max: 4 }),
    tie: fc.boolean(),
    gaps: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 4, maxLength: 4 }),
    deletedAfter: fc.option(fc.integer({ min: 0, max: 10 }), { nil: null }),
  })
  .map((shape) => shape);

function historyOf(shape: HistoryShape, base: number, run: string, index: number): ResourceHistory {
  const object = OBJECT_OF[shape.mode];
  const id = `${object.slice(0, 3)}_${run}_${index}`;
  let version = 0;
  const event = (kind: string, created: number): ScenarioEvent => ({
    id: `evt_${run}_${index}_${version}`,
    type: `${object}.${kind}`,
    created,
    data: { object, id, version: version++ },
  });
  const events: ScenarioEvent[] = [event('created', base)];
  let second = base + (shape.tie ? 0 : shape.gaps[0]!);
  for (let update = 0; update < shape.updates; update++) {
    events.push(event('updated', second));
    second += shape.gaps[(update + 1) % shape.gaps.length]!;
  }
  if (shape.deletedAfter !== null) events.push(event('deleted', base + shape.deletedAfter));
  return { mode: shape.mode, resource: `${object}:${id}`, events };
}

/**
 * Scenarios for `workers` workers: one to three resources, each event sent one to three times, the
 * copies shuffled and dealt to workers at random. `created` is a few minutes back from now, within
 * every receiver's `maxEventAgeSeconds`.
 */
export function scenarios(workers: number): fc.Arbitrary<Scenario> {
  return fc
    .record({
      shapes: fc.array(historyShape, { minLength: 1, maxLength: 3 }),
      copies: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 24, maxLength: 24 }),
      order: fc.array(fc.nat(), { minLength: 72, maxLength: 72 }),
      deal: fc.array(fc.nat(workers - 1), { minLength: 72, maxLength: 72 }),
    })
    .map(({ shapes, copies, order, deal }) => {
      const run = crypto.randomUUID().slice(0, 8);
      const base = Math.floor(Date.now() / 1000) - 120;
      const histories = shapes.map((shape, index) => historyOf(shape, base, run, index));
      const sent = histories
        .flatMap((history) => history.events)
        .flatMap((event, index) => Array.from({ length: copies[index % copies.length]! }, () => event));
      const shuffled = sent
        .map((event, index) => ({ event, key: order[index % order.length]!, index }))
        .toSorted((a, b) => a.key - b.key || a.index - b.index);
      const queues: ScenarioEvent[][] = Array.from({ length: workers }, () => []);
      for (const [index, { event }] of shuffled.entries()) queues[deal[index % deal.length]!]!.push(event);
      return { histories, queues };
    });
}

/** The newest event of a history: the one whose state must be left. */
export function newestOf(history: ResourceHistory): ScenarioEvent {
  return history.events.reduce((a, b) => (expectedPosition(b) > expectedPosition(a) ? b : a));
}

/** One handler run, as the log keeps it. */
export interface HandlerRun {
  readonly resource: string;
  readonly eventId: string;
  readonly position: number;
  readonly version: number;
}

/** What the log holds for a run of the scenario. */
export interface LoggedRuns {
  /** Per resource, the runs in the order they started (and, when none overlapped, ended). */
  readonly runs: ReadonlyMap<string, readonly HandlerRun[]>;
  /** Per resource, how many times a handler started while another of the resource was running. */
  readonly overlaps: ReadonlyMap<string, number>;
  /** Per resource, the `version` the last handler to finish left. */
  readonly state: ReadonlyMap<string, number>;
}

/** Every way the log breaks the property, one line each; empty when it holds. */
export function violations(scenario: Scenario, logged: LoggedRuns): string[] {
  const found: string[] = [];
  for (const history of scenario.histories) {
    const { resource, mode, events } = history;
    const runs = logged.runs.get(resource) ?? [];
    const overlaps = logged.overlaps.get(resource) ?? 0;
    if (overlaps > 0)
      found.push(`${resource}: ${overlaps} handler run(s) overlapped another of the resource`);
    const counts = new Map<string, number>();
    for (const run of runs) counts.set(run.eventId, (counts.get(run.eventId) ?? 0) + 1);
    for (const event of events) {
      const count = counts.get(event.id) ?? 0;
      if (count > 1) found.push(`${resource}: ${event.id} (${event.type}) ran ${count} times`);
      if (mode === 'serialize' && count === 0)
        found.push(`${resource}: ${event.id} (${event.type}) never ran`);
    }
    if (mode !== 'latest') continue;
    let newest: HandlerRun | undefined;
    for (const run of runs) {
      if (newest !== undefined && run.position < newest.position) {
        found.push(
          `${resource}: stale run of ${run.eventId} (position ${run.position}) after ${newest.eventId} (position ${newest.position})`,
        );
      }
      if (newest === undefined || run.position >= newest.position) newest = run;
    }
    const last = newestOf(history);
    const state = logged.state.get(resource);
    if (state !== last.data.version) {
      found.push(
        `${resource}: the state left is version ${state ?? 'none'}, not the newest event's (${last.id}, ${last.type}, version ${last.data.version})`,
      );
    }
  }
  return found;
}
