/**
 * docs/stores/dynamodb.md's local recipe, run as a reader runs it (in a project made as Getting started
 * says, with the page's install, the packed build for service-webhooks; saved and run as the page says):
 * against dynalite (started here on a free port instead of the page's `npx dynalite --port 4567`). The page promises
 * that `createTable({ timeToLive: false })` works on dynalite, that the handler runs once, and that the
 * same event delivered again is answered as a duplicate; and that without `timeToLive: false` the
 * failure says what to do.
 */
import { ConfigurationError } from 'service-webhooks';
import { DynamoDBStore } from 'service-webhooks/dynamodb';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  clientFor,
  type RunningDynalite,
  startDynalite,
  uniqueTableName,
} from '../stores/dynamodb/dynalite.js';
import {
  commandOnPage,
  docBlock,
  expectHandledOnceThenDuplicate,
  gettingStartedProject,
  installBlock,
} from './support.js';

const PAGE = 'docs/stores/dynamodb.md';

let dynalite: RunningDynalite;

beforeAll(async () => {
  dynalite = await startDynalite();
});

afterAll(async () => {
  await dynalite?.stop();
});

test('the dynalite recipe creates the table, handles the event once, then answers it as a duplicate', async () => {
  const project = await gettingStartedProject('stores-dynamodb', installBlock(PAGE));
  try {
    project.save(docBlock(PAGE, 'dynamodb-local'), 'dynamodb-local.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx dynamodb-local.ts'), {
      DYNAMODB_ENDPOINT: dynalite.endpoint,
      TABLE_NAME: uniqueTableName('docs'),
    });
    // The AWS SDK warns on stderr under Node 20 that it will need Node 22; nothing else may be there.
    expect(stderr).not.toMatch(/Error/);
    expectHandledOnceThenDuplicate(stdout);
  } finally {
    project.remove();
  }
}, 180_000);

test('without timeToLive: false, createTable on dynalite says to pass it (and the table is there)', async () => {
  const client = clientFor(dynalite.endpoint);
  try {
    const store = new DynamoDBStore({ client, tableName: uniqueTableName('docs-ttl') });
    const error = await store.createTable().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toContain('createTable({ timeToLive: false })');
    expect((error as Error).cause).toMatchObject({ name: 'UnknownOperationException' });
    await expect(store.createTable({ timeToLive: false })).resolves.toBeUndefined();
    expect(await store.claim('evt_docs', 'token', 1_000)).toBe('claimed');
  } finally {
    client.destroy();
  }
});
