import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type {
  DeliveryAnswer,
  DeliveryTelemetry,
  Eventual,
  HandlerStep,
  TelemetryStep,
} from 'service-webhooks/core';
import { ATTRIBUTES, boundedEventType } from './attributes.js';
import type { Instruments } from './instruments.js';
import { formatTraceparent } from './trace-context.js';

/**
 * One delivery's span and metrics, or one worker's run of an inbox entry. The span is ended once:
 * at the answer, or, when the answer was `handler_timeout` while the handlers still ran, when they
 * end, so that the spans the handlers made stay inside their parent.
 */
export class DeliverySpan implements DeliveryTelemetry {
  readonly #tracer: Tracer;
  readonly #instruments: Instruments;
  readonly #span: Span;
  /** The context the delivery runs in: its parent's, with this span active. */
  readonly #context: Context;
  /** A worker's run: counted in `webhook.inbox.runs`, not as a delivery the sender was answered. */
  readonly #inboxRun: boolean;
  readonly #started = performance.now();
  /** Set once the signature held; metric attributes never carry an unverified type. */
  #eventType: string | undefined;
  #handlersStarted = 0;
  #answered = false;

  constructor(tracer: Tracer, instruments: Instruments, span: Span, parent: Context, inboxRun: boolean) {
    this.#tracer = tracer;
    this.#instruments = instruments;
    this.#span = span;
    this.#context = trace.setSpan(parent, span);
    this.#inboxRun = inboxRun;
  }

  verified(eventId: string, eventType: string, secretIndex: number): void {
    this.#eventType = eventType;
    if (!this.#span.isRecording()) return;
    this.#span.setAttributes({
      [ATTRIBUTES.eventId]: eventId,
      [ATTRIBUTES.eventType]: eventType,
      [ATTRIBUTES.secretIndex]: secretIndex,
    });
  }

  tenant(tenant: string): void {
    // The span only: metric attributes stay bounded, and tenants are as many as a platform has.
    if (this.#span.isRecording()) this.#span.setAttribute(ATTRIBUTES.tenant, tenant);
  }

  within<T>(work: () => T): T {
    return context.with(this.#context, work);
  }

  step<T>(name: TelemetryStep, call: () => Eventual<T>): Eventual<T> {
    // Without a recording span (no SDK, or not sampled) a step would be a no-op span and two closures.
    if (!this.#span.isRecording()) return call();
    const span = this.#tracer.startSpan(`webhook.${name}`, undefined, this.#context);
    // Inside the step's context, so a store driver's own span (ioredis, pg) is the step's child.
    const result = context.with(trace.setSpan(this.#context, span), call);
    if (!(result instanceof Promise)) {
      span.end();
      return result;
    }
    return result.then(
      (value) => {
        span.end();
        return value;
      },
      (cause: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: `${name} failed` });
        span.end();
        throw cause;
      },
    );
  }

  handlersStarted(): void {
    this.#handlersStarted = performance.now();
  }

  /** One `webhook.handler` event on the delivery's span per handler, in the order they ran. */
  handlerSettled(step: HandlerStep): void {
    if (!this.#span.isRecording()) return;
    this.#span.addEvent('webhook.handler', {
      [ATTRIBUTES.handlerIndex]: step.index,
      [ATTRIBUTES.handlerName]: step.name,
      [ATTRIBUTES.handlerOutcome]: step.outcome,
      [ATTRIBUTES.handlerDurationMs]: step.durationMs,
    });
  }

  workSettled(kind: 'succeeded' | 'failed' | 'timed_out'): void {
    if (this.#handlersStarted === 0) return;
    const seconds = (performance.now() - this.#handlersStarted) / 1000;
    this.#handlersStarted = 0;
    this.#instruments.handlerDuration.record(seconds, {
      [ATTRIBUTES.eventType]: boundedEventType(this.#eventType),
      [ATTRIBUTES.outcome]: kind,
    });
  }

  leaseLost(): void {
    this.#instruments.leaseLost.add(1, { [ATTRIBUTES.eventType]: boundedEventType(this.#eventType) });
    this.#span.addEvent('webhook.lease.lost');
  }

  traceparent(): string | undefined {
    return formatTraceparent(this.#span.spanContext());
  }

  logFields(): { readonly trace_id: string; readonly span_id: string } | undefined {
    const spanContext = this.#span.spanContext();
    if (!trace.isSpanContextValid(spanContext)) return undefined;
    return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
  }

  end(answer: DeliveryAnswer): void {
    if (answer.late) {
      this.#endLate(answer);
      return;
    }
    if (this.#answered) return;
    this.#answered = true;
    const { outcome, status, code, error } = answer;
    const attributes: Attributes = { [ATTRIBUTES.outcome]: outcome };
    if (this.#eventType !== undefined) attributes[ATTRIBUTES.eventType] = boundedEventType(this.#eventType);
    if (code !== undefined) attributes[ATTRIBUTES.errorType] = code;
    if (this.#inboxRun) this.#instruments.inboxRuns.add(1, attributes);
    else {
      this.#instruments.deliveries.add(1, attributes);
      this.#instruments.deliveryDuration.record((performance.now() - this.#started) / 1000, attributes);
    }
    const span = this.#span;
    if (span.isRecording()) {
      span.setAttribute(ATTRIBUTES.outcome, outcome);
      if (!this.#inboxRun) span.setAttribute(ATTRIBUTES.statusCode, status);
      if (code !== undefined) span.setAttribute(ATTRIBUTES.errorType, code);
      // A 4xx is the sender's problem, as an HTTP server's 4xx is: the span's status stays unset.
      if (status >= 500) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? 'internal_error' });
        if (error) span.recordException(ownError(error));
      }
    }
    // Answered while the handlers still run: their end ends the span (see endLate).
    if (code === 'handler_timeout') return;
    span.end();
  }

  #endLate(answer: DeliveryAnswer): void {
    const span = this.#span;
    span.setAttribute(ATTRIBUTES.late, true);
    span.addEvent('webhook.handlers.settled', { [ATTRIBUTES.outcome]: answer.outcome });
    if (answer.error) span.recordException(ownError(answer.error));
    span.end();
  }
}

/** What a failed span records: the handler's (or store's) own error with its stack, not the wrapper. */
function ownError(error: Error): Error {
  return error.cause instanceof Error ? error.cause : error;
}
