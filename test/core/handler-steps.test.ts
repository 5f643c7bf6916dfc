/**
 * Which handlers ran, handler by handler: the per-handler step of the observer seam. Told to a telemetry
 * plug-in (`handlerSettled`) and listed on the log record of a logger that asks (`WANTS_HANDLER_STEPS`);
 * a logger that does not ask gets no `handlers`, and nothing is timed for it.
 */
import {
  createWebhooks,
  type DeliveryRecord,
  type DeliveryTelemetry,
  type HandlerStep,
  WANTS_HANDLER_STEPS,
  type WebhookTelemetry,
} from 'service-webhooks';
import { createTestEvent, deliver } from 'service-webhooks/testing';
import { describe, expect, it } from 'vitest';

const SECRET = 'whsec_handler_steps';

function recordingLogger(asks: boolean) {
  const records: DeliveryRecord[] = [];
  const log = (record: DeliveryRecord) => {
    records.push(record);
  };
  const logger = { info: log, warn: log, error: log };
  if (asks) Object.defineProperty(logger, WANTS_HANDLER_STEPS, { value: true });
  return { logger, records };
}

const names = (steps: readonly HandlerStep[] | undefined) =>
  steps?.map((step) => `${step.name} ${step.outcome}`);

describe('the handler steps', () => {
  it('lists each handler that ran, in order, on the record of a logger that asks: sync, async, and the one that failed', async () => {
    const { logger, records } = recordingLogger(true);
    const webhooks = createWebhooks({ secret: SECRET, logger });
    webhooks.onError(() => {});
    webhooks.on('user.created', function saveUser() {});
    webhooks.on('user.created', async function sendWelcome() {
      await new Promise((resolve) => setTimeout(resolve, 5));
    });
    webhooks.onAny((event) => {
      if (event.data && (event.data as { email?: string }).email === 'fail@example.com')
        throw new Error('audit down');
    });
    webhooks.on('user.created', function neverReached() {});
    expect((await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET })).status).toBe(200);
    expect(names(records.at(-1)!.handlers)).toEqual([
      'saveUser succeeded',
      'sendWelcome succeeded',
      'anonymous succeeded',
      'neverReached succeeded',
    ]);
    expect(records.at(-1)!.handlers![1]!.durationMs).toBeGreaterThan(0);
    expect(records.at(-1)!.handlers!.map((step) => step.index)).toEqual([0, 1, 2, 3]);
    const failing = createTestEvent('user.created', { data: { email: 'fail@example.com' } });
    expect((await deliver(webhooks, failing, { secret: SECRET })).status).toBe(500);
    expect(names(records.at(-1)!.handlers)).toEqual([
      'saveUser succeeded',
      'sendWelcome succeeded',
      'anonymous failed',
    ]);
  });

  it('gives a logger that does not ask no steps', async () => {
    const { logger, records } = recordingLogger(false);
    const webhooks = createWebhooks({ secret: SECRET, logger });
    webhooks.on('user.created', function saveUser() {});
    await deliver(webhooks, createTestEvent('user.created'), { secret: SECRET });
    expect(records).toHaveLength(1);
    expect(records[0]!.handlers).toBeUndefined();
  });

  it('tells a telemetry plug-in of each handler as it settles', async () => {
    const told: HandlerStep[] = [];
    const delivery: DeliveryTelemetry = {
      verified() {},
      within: (work) => work(),
      step: (_name, call) => call(),
      handlersStarted() {},
      handlerSettled: (step) => told.push(step),
      workSettled() {},
      leaseLost() {},
      traceparent: () => undefined,
      logFields: () => undefined,
      end() {},
    };
    // A plug-in of the seam's own shape: the OpenTelemetry one is tested against a real SDK elsewhere.
    const telemetry: WebhookTelemetry = {
      startDelivery: () => delivery,
      startInboxRun: () => delivery,
      deadLettered() {},
      observeInbox: () => () => {},
    };
    const webhooks = createWebhooks({ secret: SECRET, telemetry });
    webhooks.on('project.created', async function first() {});
    webhooks.on('project.created', function second() {});
    await deliver(webhooks, createTestEvent('project.created'), { secret: SECRET });
    expect(names(told)).toEqual(['first succeeded', 'second succeeded']);
  });
});
