/**
 * docs/inbox/sqs.md's local setup on fauxqs, run as a reader runs it (in a project made as Getting
 * started says, with the page's install, the packed build for service-webhooks; saved and run as the
 * page says): with
 * AWS_ENDPOINT_URL_SQS pointing at fauxqs (started here on a free port), the block creates the inbox
 * queue and its dead-letter queue, and the inbox redrives to the dead-letter queue after 20 receives.
 */
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, installBlock } from './support.js';

const PAGE = 'docs/inbox/sqs.md';

let fauxqs: FauxqsServer;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, host: '127.0.0.1', logger: false });
});

afterAll(async () => {
  await fauxqs?.stop();
});

test('the fauxqs block creates the inbox queue, redriving to its dead-letter queue', async () => {
  const env = {
    AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${fauxqs.port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  };
  const project = await gettingStartedProject('inbox-sqs', installBlock(PAGE));
  project.save(docBlock(PAGE, 'sqs-fauxqs-queues'), 'create-queues.ts');
  const { stdout } = await project
    .shell(commandOnPage(PAGE, 'npx tsx create-queues.ts'), env)
    .finally(() => project.remove());
  const inboxUrl = /^INBOX_QUEUE_URL=(\S+)$/m.exec(stdout)?.[1];
  const deadLetterUrl = /^DEAD_LETTER_QUEUE_URL=(\S+)$/m.exec(stdout)?.[1];
  expect(inboxUrl).toMatch(/webhooks-inbox$/);
  expect(deadLetterUrl).toMatch(/webhooks-dead-letters$/);

  const sqs = new SQSClient({
    region: env.AWS_REGION,
    endpoint: env.AWS_ENDPOINT_URL_SQS,
    useQueueUrlAsEndpoint: false,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const attributes = async (url: string) =>
      (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }))).Attributes!;
    const deadLetters = await attributes(deadLetterUrl!);
    const inbox = await attributes(inboxUrl!);
    expect(inbox.VisibilityTimeout).toBe('180');
    expect(JSON.parse(inbox.RedrivePolicy!)).toEqual({
      deadLetterTargetArn: deadLetters.QueueArn,
      maxReceiveCount: 20,
    });
  } finally {
    sqs.destroy();
  }
}, 180_000);
