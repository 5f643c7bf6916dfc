import { ANSWER_NOW } from './answer-now.js';
import { type BodyBudget, ByteBudget } from './body-budget.js';
import { now } from './clock.js';
import { withDeadline } from './deadline.js';
import { isTenantId, tenantKeyPart } from './dedup-scope.js';
import { type Accepted, DeliveryVerifier, type Verified } from './delivery-verifier.js';
import {
  ConfigurationError,
  type InvalidInboxEntryError,
  MethodNotAllowedError,
  RawBodyUnavailableError,
  SecretUnavailableError,
  UnauthenticatedInboxEntryError,
  UnknownTenantError,
  WebhookError,
} from './errors.js';
import { chain, type Eventual, isThenable, settled } from './eventual.js';
import {
  type Ending,
  ExactlyOnce,
  type Finish,
  HANDLED,
  QUEUED,
  Run,
  type RunKind,
  type Settle,
  type Work,
  type WorkerRun,
} from './guarded-run.js';
import { HandlerRegistry } from './handler-registry.js';
import { type HandlerStep, wantsHandlerSteps } from './handler-step.js';
import { checkEntry, checkReplayId } from './inbox-entry.js';
import { inboxWriteError } from './inbox-errors.js';
import type { InboxSeal } from './inbox-seal.js';
import { MisconfigurationWatch } from './misconfiguration-watch.js';
import { type LogContext, Observers } from './observers.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import { OrderedScope } from './ordered-scope.js';
import { describeInput, isRawBody } from './raw-body.js';
import { answerable, responseTo, tableCode } from './responses.js';
import {
  DeliveryContext,
  runHandlersWithin,
  type StepObserver,
  SUCCEEDED,
  TenantDeliveryContext,
} from './run-handlers.js';
import type { SchemaCheck } from './schema-check.js';
import type { RunStore, ScopedStore } from './scoped-store.js';
import { readHeader, SIGNATURE_HEADER } from './signature.js';
import type { DeliveryTelemetry, WebhookTelemetry } from './telemetry.js';
import { TenantDirectory } from './tenant-directory.js';
import { READS_TENANT } from './tenant-input.js';
import { tenantRequestOf } from './tenant-source.js';
import { TimeoutQueue } from './timeout-queue.js';
import type {
  AnyWebhookEvent,
  ErrorListener,
  EventForArgument,
  EventNameArgument,
  EventSchemas,
  HandleInput,
  InboxEntry,
  InboxQueue,
  NoSchemas,
  ProcessOptions,
  ProcessResult,
  RawBody,
  StaleListener,
  TenantWebhooksOptions,
  WebhookEvent,
  WebhookHandler,
  WebhookLogger,
  WebhookResponse,
  Webhooks,
  WebhooksOptions,
} from './types.js';
import { UnsealedEntriesWarning } from './unsealed-entries-warning.js';

/** A worker's handler budget unless `process` is given one: well past a request's, short of forever. */
const DEFAULT_RUN_TIMEOUT_MS = 300_000;

class WebhookReceiver implements Webhooks {
  readonly #options: ResolvedOptions;
  readonly #observers: Observers;
  readonly #telemetry: WebhookTelemetry | undefined;
  readonly #verifier: DeliveryVerifier;
  readonly #exactlyOnce: ExactlyOnce;
  readonly #registry = new HandlerRegistry();
  readonly #handlerTimeouts: TimeoutQueue;
  readonly #storeTimeouts: TimeoutQueue;
  readonly #dedupTtlMs: number;
  /** Says on stderr when every delivery is refused for a reason of this receiver's setup (no logger). */
  readonly #watch: MisconfigurationWatch | undefined;
  /** Says, at most once a minute, that entries without a seal run (`acceptUnsealed`, during an upgrade). */
  readonly #unsealedWarning: UnsealedEntriesWarning;
  /** Each run's handler steps, kept only for a logger that asked for them (`WANTS_HANDLER_STEPS`). */
  readonly #handlerSteps: WeakMap<object, HandlerStep[]> | undefined;
  readonly bodyBudget: BodyBudget;
  readonly maxBodyBytes: number;
  readonly handlerTimeoutMs: number;
  readonly logger: WebhookLogger | undefined;
  readonly telemetry: WebhookTelemetry | undefined;
  /** The three kinds of run, made once: handlers in the request, a write at an inbox's door, a worker's run. */
  readonly #inRequest: RunKind<WebhookResponse>;
  readonly #atDoor: RunKind<WebhookResponse>;
  readonly #inWorker: RunKind<Ending>;
  /** The `onStale` listeners (with the `ordering` option). */
  readonly #staleListeners: StaleListener[] = [];
  /** With the `tenant` option: each tenant's verifier and scoped store, found per delivery. */
  readonly #tenants: TenantDirectory<DeliveryVerifier> | undefined;
  /** Tells adapters to pass the request's route parameters and URL (see `readsTenant`). */
  readonly [READS_TENANT]: boolean;
  /** How deep `[ANSWER_NOW]` calls are within this call stack (a handler may answer another delivery). */
  #answering = 0;
  /**
   * The answer of the request's handlers still running, made within the `[ANSWER_NOW]` call now on the
   * stack, which reads and clears it before returning. It never rejects (a bug becomes 500
   * `internal_error` where it is settled: see `runHandlersWithin`), so it needs no `catch`: that was a
   * promise, a reaction and a microtask per delivery of an asynchronous handler.
   */
  #handlersAnswer: Promise<WebhookResponse> | undefined;

  constructor(options: WebhooksOptions) {
    this.#options = resolveOptions(options);
    const { logger, leaseSeconds, onStoreError, handlerTimeoutMs, storeTimeoutMs } = this.#options;
    this.#observers = new Observers(logger);
    this.#handlerSteps = wantsHandlerSteps(logger) ? new WeakMap() : undefined;
    this.#telemetry = this.telemetry = this.#options.telemetry;
    this.logger = logger;
    this.maxBodyBytes = this.#options.maxBodyBytes;
    this.handlerTimeoutMs = handlerTimeoutMs;
    // What a store or an inbox engine finds between calls (a dropped pooled connection, an unsafe
    // eviction policy) reaches onError too, rather than an 'error' event that would end the process.
    const reportInBackground = (error: WebhookError) => this.#observers.reportInBackground(error);
    this.#options.store.onBackgroundError?.(reportInBackground);
    this.#options.inbox?.onBackgroundError?.(reportInBackground);
    this.#handlerTimeouts = new TimeoutQueue(handlerTimeoutMs);
    this.#storeTimeouts = new TimeoutQueue(storeTimeoutMs);
    this.#verifier = new DeliveryVerifier(this.#options, this.#storeTimeouts, this.#observers);
    this.#tenants = this.#options.tenant && this.#tenantDirectory(this.#options.tenant);
    this[READS_TENANT] = this.#tenants !== undefined;
    this.#exactlyOnce = new ExactlyOnce(leaseSeconds, onStoreError, this.#observers);
    this.#dedupTtlMs = this.#options.dedupTtlSeconds * 1000;
    this.#watch = this.#observers.loggerSpeaks ? undefined : new MisconfigurationWatch();
    this.#unsealedWarning = new UnsealedEntriesWarning();
    this.bodyBudget = new ByteBudget(this.#options.maxBodyBytesInFlight);
    const { runHandlers, enqueue, answerRun, ending } = WebhookReceiver.#kindSteps;
    const kind = <A>(work: Work<A>, finish: Finish<A>, success: Ending, inboxRun: boolean): RunKind<A> => ({
      engine: this.#exactlyOnce,
      owner: this,
      work,
      finish,
      success,
      inboxRun,
    });
    this.#inRequest = kind(runHandlers, answerRun, HANDLED, false);
    this.#atDoor = kind(enqueue, answerRun, QUEUED, false);
    this.#inWorker = kind(runHandlers, ending, HANDLED, true);
  }

  on<Arg extends string | readonly string[]>(
    name: EventNameArgument<Arg>,
    handler: WebhookHandler<EventForArgument<Arg, NoSchemas>>,
  ): Webhooks {
    this.#registry.add(name, handler as unknown as WebhookHandler<WebhookEvent>);
    return this;
  }

  onAny(handler: WebhookHandler<AnyWebhookEvent>): Webhooks {
    this.#registry.add(undefined, handler as unknown as WebhookHandler<WebhookEvent>);
    return this;
  }

  onError(listener: ErrorListener): Webhooks {
    this.#observers.listen(listener);
    return this;
  }

  onStale(listener: StaleListener): Webhooks {
    if (typeof listener !== 'function') throw new TypeError('onStale needs a function.');
    this.#staleListeners.push(listener);
    return this;
  }

  /**
   * The store a run of `event` uses: the receiver's scoped store, or with the `ordering` option, for an
   * event of a guarded type, a view that takes its resource along (see `OrderedScope`). Called only
   * when the receiver has the option, so an unguarded receiver's path is unchanged.
   */
  #orderedStoreFor(
    event: WebhookEvent,
    context: { unordered?: boolean },
    store: ScopedStore = this.#verifier.store,
  ): RunStore {
    const decision = this.#options.ordering!.decide(event);
    if (decision === undefined) return store;
    if (!decision.guarded) {
      // Said in its log record: the type is guarded, but this event names no resource to guard.
      context.unordered = true;
      return store;
    }
    const { resource, position } = decision;
    return new OrderedScope(
      store,
      decision.mode,
      resource,
      position,
      this.#options.ordering!.watermarkTtlMs,
      (watermark) => this.#stale(event, { resource, position, watermark }),
    );
  }

  /** Tell the `onStale` listeners; what they throw or return changes nothing. */
  #stale(event: WebhookEvent, stale: Parameters<StaleListener>[1]): void {
    for (const listener of this.#staleListeners) {
      try {
        const returned = listener(event, stale);
        if (returned instanceof Promise) returned.catch(() => {});
      } catch {
        // A listener that throws changes nothing, as the table says.
      }
    }
  }

  report(error: WebhookError, event?: AnyWebhookEvent | WebhookEvent): void {
    this.#observers.report(error, event as WebhookEvent | undefined);
  }

  async verifyAndParse(body: RawBody, signatureHeader: string | null | undefined): Promise<WebhookEvent> {
    if (this.#tenants) throw withoutTenant('verifyAndParse');
    const verified = await this.#verifier.verify(body, signatureHeader ?? undefined);
    if (!verified.ok) throw verified.error;
    const checked = this.#options.schemas
      ? await this.#options.schemas.accept(verified, this.#storeTimeouts)
      : verified;
    if (checked instanceof WebhookError) throw checked;
    return checked.event;
  }

  handle(input: HandleInput): Promise<WebhookResponse> {
    const answer = this[ANSWER_NOW](input);
    return answer instanceof Promise ? answer : Promise.resolve(answer);
  }

  /** `handle` without the promise when the answer is known at once; adapters use it (see `answerNow`). */
  [ANSWER_NOW](input: HandleInput): Eventual<WebhookResponse> {
    // Nothing may reject: whatever an adapter passes, or a bug, the sender gets an answer of the table.
    let answer: Eventual<WebhookResponse>;
    let handlers: Promise<WebhookResponse> | undefined;
    this.#answering++;
    try {
      answer = this.#handle(input);
    } catch (error) {
      return this.#unexpected(error);
    } finally {
      this.#answering--;
      handlers = this.#handlersAnswer;
      this.#handlersAnswer = undefined;
    }
    if (!(answer instanceof Promise) || answer === handlers) return answer;
    return answer.catch(this.#unexpected);
  }

  reject(error: WebhookError): WebhookResponse {
    return this.#refuse({ started: 0, telemetry: this.#telemetry?.startDelivery() }, error);
  }

  #refuse(context: LogContext, error: WebhookError): WebhookResponse {
    if (error.status >= 500) this.#observers.report(error, undefined);
    return this.#answer(context, { code: error.code, error });
  }

  async process(entry: InboxEntry, options: ProcessOptions = {}): Promise<ProcessResult> {
    let checked: InboxEntry;
    try {
      checked = checkEntry(entry);
    } catch (error) {
      // A poison message: said once here, and the engine dead-letters it without a retry.
      this.#observers.report(error as InvalidInboxEntryError, undefined);
      throw error;
    }
    const { secretIndex, receivedAt } = checked;
    // Typed for users as the union of documented events; the core handles every event alike.
    const event = entry.event as WebhookEvent;
    const replayId = checkReplayId(options.replayId);
    const verifier = this.#tenants
      ? await this.#tenantOf(this.#tenants, checked)
      : this.#oneRegistration(checked);
    const failed = await verifier.ready();
    if (failed) throw failed;
    // Before anything of the entry is used: the queue is no part of what a worker trusts. A tenant's
    // entry is trusted sealed only: unsealed, nothing vouches for the tenant it names.
    const sealed = await this.#trust(
      checked,
      options.acceptUnsealed === true && !this.#tenants,
      verifier.inboxSeal,
    );
    const started = this.#observers.logger ? now() : 0;
    // A trace context from the queue is honoured only when the door's seal vouches for it.
    const traceparent = sealed && typeof checked.traceparent === 'string' ? checked.traceparent : undefined;
    const attempt = checked.attempt ?? options.attempt ?? 1;
    const telemetry = this.#telemetry?.startInboxRun({ traceparent, attempt, replayId });
    telemetry?.verified(event.id, event.type, secretIndex);
    if (checked.tenant !== undefined) telemetry?.tenant?.(checked.tenant);
    const unchecked: Accepted = { ok: true, event, secretIndex, rememberMs: this.#dedupTtlMs, receivedAt };
    const accepted = this.#options.schemas
      ? await this.#options.schemas.accept(unchecked, this.#storeTimeouts)
      : unchecked;
    if (accepted instanceof WebhookError) {
      // A mismatch no retry can fix: the engine dead-letters it now, and a replay after the schema's
      // fix runs it. A schema past its deadline is an ordinary failed attempt: the engine retries it.
      this.#observers.report(accepted, event);
      this.#log({ started, telemetry, event, secretIndex }, { code: accepted.code, error: accepted });
      throw accepted;
    }
    const worker: WorkerRun = {
      attempt,
      signal: options.signal,
      replayId,
      detach: undefined,
    };
    const marks: { unordered?: boolean } = {};
    const store = this.#options.ordering
      ? this.#orderedStoreFor(accepted.event, marks, verifier.store)
      : verifier.store;
    const run = new Run(
      this.#inWorker,
      store,
      accepted,
      started,
      this.#registry.handlersFor(event.type),
      options.handlerTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS,
      worker,
      telemetry,
    );
    if (marks.unordered) (run as LogContext & { unordered?: boolean }).unordered = true;
    let ending: Ending;
    try {
      ending = await (telemetry
        ? telemetry.within(() => this.#exactlyOnce.run(run))
        : this.#exactlyOnce.run(run));
    } finally {
      worker.detach?.();
    }
    if (ending.code === 'handled' || ending.code === 'duplicate' || ending.code === 'stale')
      return ending.code;
    // A claim held elsewhere is not a failure in a worker (a redelivery after a crash meets the dead
    // worker's lease): the engine retries after the lease, so it is not reported.
    throw ending.error;
  }

  async sealAttempt(entry: InboxEntry, attempt: number): Promise<InboxEntry> {
    if (!Number.isSafeInteger(attempt) || attempt < 1)
      throw new TypeError(`sealAttempt needs an attempt count from 1; got ${String(attempt)}.`);
    const verifier = this.#tenants ? await this.#tenantOf(this.#tenants, entry) : this.#verifier;
    const failed = await verifier.ready();
    if (failed) throw failed;
    const { attemptSeal: _dropped, ...rest } = entry;
    // An unsealed entry stays unsealed: only the door vouches for an entry, never a worker.
    if (typeof entry.seal !== 'string' || attempt === 1) return { ...rest, attempt };
    return { ...rest, attempt, attemptSeal: await verifier.inboxSeal.sealAttempt(entry.seal, attempt) };
  }

  /**
   * The verifier of the tenant an entry names, for a receiver with `tenant`: its seal keys and its
   * dedup scope. An entry that names none (or not as a door writes one) is refused as unauthenticated,
   * a poison message. A tenant the `secret` function no longer knows, or cannot answer for now, fails
   * the attempt: the engine retries it, and dead-letters it with that cause if the tenant never returns.
   */
  async #tenantOf(
    directory: TenantDirectory<DeliveryVerifier>,
    entry: InboxEntry,
  ): Promise<DeliveryVerifier> {
    const { tenant } = entry;
    if (!isTenantId(tenant)) {
      const error = new UnauthenticatedInboxEntryError(
        'it names no tenant: a receiver with `tenant` runs only the entries its door wrote, each for its tenant.',
      );
      this.#observers.report(error, undefined);
      throw error;
    }
    const found = await directory.find(tenant);
    if (found instanceof UnknownTenantError) {
      // The door verified it with this tenant's secret: the tenant was removed since, or a replica lags.
      this.#observers.report(found, entry.event as WebhookEvent);
      throw found;
    }
    // A `secret` function that failed was reported where it failed.
    if (found instanceof WebhookError) throw found;
    return found;
  }

  /**
   * The receiver's own verifier, for an entry of no tenant. One a door of many tenants wrote is refused
   * even when its seal would hold (both receivers given one `inboxKey`): run here, it would leave its
   * tenant's scope and reach handlers without `ctx.tenant`.
   */
  #oneRegistration(entry: InboxEntry): DeliveryVerifier {
    if (entry.tenant === undefined) return this.#verifier;
    const error = new UnauthenticatedInboxEntryError(
      'it was written for a tenant, by a door of many tenants: only a receiver with `tenant` runs it.',
    );
    this.#observers.report(error, undefined);
    throw error;
  }

  /**
   * Whether the entry is the door's (true), or an unsealed one let through by `acceptUnsealed`
   * (false); throws `UnauthenticatedInboxEntryError`, reported, for anything else.
   */
  async #trust(entry: InboxEntry, acceptUnsealed: boolean, seals: InboxSeal): Promise<boolean> {
    const check = await seals.check(entry);
    if (check === 'sealed') return true;
    if (check === 'unsealed' && acceptUnsealed) {
      this.#unsealedWarning.note();
      return false;
    }
    const error = new UnauthenticatedInboxEntryError(
      check === 'unsealed'
        ? 'it carries no seal: the door did not write it (or a door of a version before seals did: see `acceptUnsealedEntries`).'
        : 'its seal does not hold: it was changed since the door wrote it, or sealed with a key no longer listed.',
    );
    // Not the entry's event: nothing of a forgery is handed on as if it were an event.
    this.#observers.report(error, undefined);
    throw error;
  }

  #handle(input: HandleInput): Eventual<WebhookResponse> {
    const started = this.#observers.logger ? now() : 0;
    const telemetry = this.#telemetry?.startDelivery();
    return telemetry
      ? telemetry.within(() => this.#receive(input, started, telemetry))
      : this.#receive(input, started, undefined);
  }

  #receive(
    input: HandleInput,
    started: number,
    telemetry: DeliveryTelemetry | undefined,
  ): Eventual<WebhookResponse> {
    if (typeof input !== 'object' || input === null) {
      return this.#refuse(
        { started, telemetry },
        new RawBodyUnavailableError(`handle() needs { body, headers }, not ${describeInput(input)}.`),
      );
    }
    const { method } = input;
    if (method !== undefined && method !== 'POST' && String(method).toUpperCase() !== 'POST') {
      return this.#refuse({ started, telemetry }, new MethodNotAllowedError());
    }
    const body = input.body;
    if (!isRawBody(body)) {
      return this.#refuse(
        { started, telemetry },
        new RawBodyUnavailableError(
          `handle() needs the raw body as a Uint8Array, ArrayBuffer or string, not ${describeInput(body)}; a body parser ran before the webhook route.`,
        ),
      );
    }
    const timeoutMs =
      input.handlerTimeoutMs !== undefined && input.handlerTimeoutMs < this.#options.handlerTimeoutMs
        ? Math.max(1, Math.floor(input.handlerTimeoutMs))
        : this.#options.handlerTimeoutMs;
    if (this.#tenants) return this.#forTenant(this.#tenants, input, body, timeoutMs, started, telemetry);
    const verified = this.#verifier.verify(body, readHeader(input.headers, SIGNATURE_HEADER));
    // The one step whose continuation needs two values: a closure only when verification must wait.
    return verified instanceof Promise
      ? verified.then((result) => this.#afterVerify(result, timeoutMs, started, telemetry, undefined))
      : this.#afterVerify(verified, timeoutMs, started, telemetry, undefined);
  }

  /** The tenant's directory: its `secret` function's answers cached, each made a verifier of its own. */
  #tenantDirectory(tenant: NonNullable<ResolvedOptions['tenant']>): TenantDirectory<DeliveryVerifier> {
    const perTenant: ResolvedOptions = { ...this.#options, secret: [] };
    return new TenantDirectory(
      tenant.secret,
      (id, secrets) =>
        new DeliveryVerifier({ ...perTenant, secret: secrets }, this.#storeTimeouts, this.#observers, {
          id,
          keyPart: tenantKeyPart(id)!,
        }),
      tenant,
      this.#storeTimeouts,
      (cause) => this.#secretFailed(cause, 'The tenant `secret` function'),
    );
  }

  #secretFailed(cause: unknown, what: string): SecretUnavailableError {
    const error = new SecretUnavailableError({ cause }, what);
    this.#observers.report(error, undefined);
    return error;
  }

  /**
   * A receiver with `tenant`: read the tenant from the request, find its verifier (its secrets,
   * cached), then on as any delivery with that verifier's scoped store. An unknown tenant is answered
   * before anything is verified or stored; a tenant reader or `secret` function that throws or misses
   * `storeTimeoutMs` is 503 `secret_unavailable`.
   */
  #forTenant(
    directory: TenantDirectory<DeliveryVerifier>,
    input: HandleInput,
    body: RawBody,
    timeoutMs: number,
    started: number,
    telemetry: DeliveryTelemetry | undefined,
  ): Eventual<WebhookResponse> {
    const context: LogContext = { started, telemetry };
    const read = this.#options.tenant!.read;
    let named: unknown;
    try {
      named = read(tenantRequestOf(input));
    } catch (cause) {
      const error = this.#secretFailed(cause, '`tenant.from`');
      return this.#answer(context, { code: error.code, error });
    }
    const found = (id: unknown): Eventual<DeliveryVerifier | WebhookError> => {
      if (typeof id !== 'string' || id.length === 0)
        return new UnknownTenantError(
          undefined,
          `\`tenant.from\` found none in the request${hintFor(input)}.`,
        );
      if (tenantKeyPart(id) === undefined)
        return new UnknownTenantError(
          id,
          'the id is too long to be one (at most 128 characters, percent-encoded).',
        );
      return directory.find(id);
    };
    const verifier = isThenable(named)
      ? withDeadline(named, this.#storeTimeouts, '`tenant.from`').then(found, (cause: unknown) =>
          this.#secretFailed(cause, '`tenant.from`'),
        )
      : found(named);
    return chain(verifier, undefined, (_, tenant) =>
      this.#verifyForTenant(tenant, input, body, timeoutMs, context),
    );
  }

  #verifyForTenant(
    tenant: DeliveryVerifier | WebhookError,
    input: HandleInput,
    body: RawBody,
    timeoutMs: number,
    context: LogContext,
  ): Eventual<WebhookResponse> {
    if (tenant instanceof WebhookError) {
      // Reported already when it is a failure (503); an unknown tenant goes to the listeners alone.
      if (tenant instanceof UnknownTenantError) this.#observers.notify(tenant);
      return this.#answer(context, { code: tenant.code, error: tenant });
    }
    const { started, telemetry } = context;
    const verified = tenant.verify(body, readHeader(input.headers, SIGNATURE_HEADER));
    return chain(verified, tenant.store, (store, result) =>
      this.#afterVerify(result, timeoutMs, started, telemetry, store),
    );
  }

  #afterVerify(
    verified: Verified,
    timeoutMs: number,
    started: number,
    telemetry: DeliveryTelemetry | undefined,
    tenantStore: ScopedStore | undefined,
  ): Eventual<WebhookResponse> {
    if (!verified.ok) {
      const { error } = verified;
      if (error.status < 500) this.#watch?.refused(error.code);
      return this.#answer({ started, telemetry }, { code: error.code, error });
    }
    this.#watch?.verified();
    const { event, secretIndex } = verified;
    const store = tenantStore ?? this.#verifier.store;
    if (telemetry) {
      telemetry.verified(event.id, event.type, secretIndex);
      if (tenantStore !== undefined) telemetry.tenant?.(tenantStore.tenant!);
    }
    if (this.#options.inbox) {
      return this.#exactlyOnce.run(
        new Run(this.#atDoor, store, verified, started, [], 0, undefined, telemetry),
      );
    }
    const handlers = this.#registry.handlersFor(event.type);
    // Nothing to run means nothing to deduplicate: acknowledge without a store round trip.
    if (handlers.length === 0) return this.#answer({ started, event, secretIndex, telemetry }, HANDLED);
    const schemas = this.#options.schemas;
    if (schemas)
      return this.#checked(
        schemas.accept(verified, this.#storeTimeouts),
        verified,
        handlers,
        timeoutMs,
        started,
        telemetry,
        store,
      );
    if (this.#options.ordering)
      return this.#runOrdered(verified, handlers, timeoutMs, started, telemetry, store);
    const run = new Run(this.#inRequest, store, verified, started, handlers, timeoutMs, undefined, telemetry);
    return this.#exactlyOnce.run(run);
  }

  /** A request run with the `ordering` option: its store is the event's own view (see `#orderedStoreFor`). */
  #runOrdered(
    accepted: Accepted,
    handlers: readonly WebhookHandler<WebhookEvent>[],
    timeoutMs: number,
    started: number,
    telemetry: DeliveryTelemetry | undefined,
    scoped: ScopedStore,
  ): Eventual<WebhookResponse> {
    const marks: { unordered?: boolean } = {};
    const store = this.#orderedStoreFor(accepted.event, marks, scoped);
    const run = new Run(this.#inRequest, store, accepted, started, handlers, timeoutMs, undefined, telemetry);
    if (marks.unordered) (run as LogContext & { unordered?: boolean }).unordered = true;
    return this.#exactlyOnce.run(run);
  }

  /**
   * A request run of the event as its schema gave it, or the schema's refusal answered: 500 for a
   * mismatch, 503 for a schema past its deadline.
   */
  #checked(
    checked: Eventual<SchemaCheck>,
    verified: Accepted,
    handlers: readonly WebhookHandler<WebhookEvent>[],
    timeoutMs: number,
    started: number,
    telemetry: DeliveryTelemetry | undefined,
    store: ScopedStore,
  ): Eventual<WebhookResponse> {
    if (checked instanceof Promise)
      return checked.then((done) =>
        this.#checked(done, verified, handlers, timeoutMs, started, telemetry, store),
      );
    if (checked instanceof WebhookError) {
      const { event, secretIndex } = verified;
      this.#observers.report(checked, event);
      return this.#answer({ started, telemetry, event, secretIndex }, { code: checked.code, error: checked });
    }
    if (this.#options.ordering)
      return this.#runOrdered(checked, handlers, timeoutMs, started, telemetry, store);
    const run = new Run(this.#inRequest, store, checked, started, handlers, timeoutMs, undefined, telemetry);
    return this.#exactlyOnce.run(run);
  }

  /**
   * The kinds' `work` and `finish`, one set for every receiver: each finds its receiver as the kind's
   * `owner`. Made per receiver, they took V8's optimized delivery path with them when their receiver
   * went (see {@link ExactlyOnce}).
   */
  static readonly #kindSteps = {
    runHandlers: <A>(run: Run<A>, settle: Settle<A>): Eventual<A> => ownerOf(run).#runHandlers(run, settle),
    enqueue: <A>(run: Run<A>, settle: Settle<A>): Eventual<A> => ownerOf(run).#enqueue(run, settle),
    answerRun: (run: Run<WebhookResponse>, ending: Ending): WebhookResponse =>
      ownerOf(run).#answer(run, ending),
    ending: (run: Run<Ending>, ending: Ending): Ending => ownerOf(run).#ending(run, ending),
    /** What a request run's settling threw or rejected with (a bug): 500 `internal_error`, reported. */
    unexpected: (run: Run<WebhookResponse>, cause: unknown): WebhookResponse =>
      ownerOf(run).#unexpected(cause),
  };

  /** The work of a run in the request or in a worker: the event's handlers, within the budget. */
  #runHandlers<A>(run: Run<A>, settle: Settle<A>): Eventual<A> {
    const { worker } = run;
    const tenant = run.store.tenant;
    const context =
      tenant === undefined
        ? new DeliveryContext(run.secretIndex, worker?.attempt ?? 1, run.receivedAt)
        : new TenantDeliveryContext(run.secretIndex, worker?.attempt ?? 1, run.receivedAt, tenant);
    if (worker?.signal) worker.detach = context.follow(worker.signal);
    const { telemetry } = run;
    telemetry?.handlersStarted();
    const inRequest = run.kind === (this.#inRequest as RunKind<unknown>);
    const answer = runHandlersWithin(
      run.handlers,
      run.event,
      context,
      run.timeoutMs,
      this.#handlerTimeouts,
      settle,
      run,
      this.#handlerSteps !== undefined || telemetry?.handlerSettled ? this.#stepObserver(run) : undefined,
      inRequest
        ? (WebhookReceiver.#kindSteps.unexpected as unknown as (run: Run<A>, cause: unknown) => A)
        : undefined,
    );
    // Only while `[ANSWER_NOW]` is on the stack, which clears it: a run reached after a store's promise
    // is answered through that promise, and nothing keeps its answer here.
    if (inRequest && this.#answering > 0 && answer instanceof Promise)
      this.#handlersAnswer = answer as Promise<unknown> as Promise<WebhookResponse>;
    return answer;
  }

  /** Told of each handler as it settles, when a plug-in or the logger asked: both are told. */
  #stepObserver<A>(run: Run<A>): StepObserver {
    const steps = this.#handlerSteps;
    const { telemetry } = run;
    return (step) => {
      telemetry?.handlerSettled?.(step);
      if (steps === undefined) return;
      const list = steps.get(run);
      if (list === undefined) steps.set(run, [step]);
      else list.push(step);
    };
  }

  /** The work at an inbox's door: write the event durably, within the store's deadline. */
  #enqueue<A>(run: Run<A>, settle: Settle<A>): Eventual<A> {
    const inbox = this.#options.inbox as InboxQueue;
    const { event, receivedAt, secretIndex, telemetry } = run;
    const traceparent = telemetry?.traceparent();
    const { tenant } = run.store;
    let entry: InboxEntry = traceparent
      ? { event, receivedAt, secretIndex, traceparent }
      : { event, receivedAt, secretIndex };
    if (tenant !== undefined) entry = { ...entry, tenant };
    const key = run.key === undefined ? run.eventId : typeof run.key === 'string' ? run.key : run.key[0]!;
    // Sealed inside the write, so that an entry that cannot be sealed is refused like a failed write.
    // A receiver of one registration makes no more closures per delivery than before tenants.
    const write = () =>
      settled(() =>
        (tenant === undefined ? this.#verifier.inboxSeal.seal(entry) : this.#tenantSeal(tenant, entry)).then(
          (seal) => inbox.enqueue({ ...entry, seal }, key),
        ),
      );
    return withDeadline(
      telemetry ? telemetry.step('inbox.enqueue', write) : write(),
      this.#storeTimeouts,
      'inbox.enqueue',
    ).then(
      () => settle(run, SUCCEEDED),
      (cause: unknown) => settle(run, { kind: 'failed', error: inboxWriteError(cause) }),
    );
  }

  /**
   * The entry sealed with the keys of a tenant the door has just verified a delivery for: found in the
   * directory's cache but when it expired in between, then asked again; a tenant gone meanwhile fails
   * the write.
   */
  async #tenantSeal(tenant: string, entry: InboxEntry): Promise<string> {
    const found = await this.#tenants!.find(tenant);
    if (found instanceof WebhookError) throw found;
    return found.inboxSeal.seal(entry);
  }

  /** A worker's run ends in its ending, logged as a delivery's would be. */
  #ending(run: Run<Ending>, ending: Ending): Ending {
    this.#log(run, ending);
    return ending;
  }

  /**
   * Every exit answers by its code: a success of its kind, or the status table's answer for an error
   * (4xx a refusal, nothing on our side failed; 5xx a failure, the sender retries). One record is
   * logged per answer; a run's work past its answer (`late`) is logged, its answer goes nowhere.
   */
  #answer(context: LogContext, ending: Ending): WebhookResponse {
    const answered = answerable(ending);
    const response = responseTo(answered);
    this.#log(context, answered, response);
    return response;
  }

  #log(context: LogContext, ending: Ending, response = responseTo(ending)): void {
    const { telemetry } = context;
    if (!this.#observers.logger && !telemetry) return;
    const { code, error } = ending;
    const ok = code === 'handled' || code === 'queued' || code === 'duplicate' || code === 'stale';
    const failed = response.status >= 500;
    const outcome = ok ? code : failed ? 'failed' : 'rejected';
    const answered = ok ? undefined : tableCode(code);
    const failure = failed ? error : undefined;
    telemetry?.end({
      outcome,
      status: response.status,
      code: answered,
      error: failure,
      late: !!context.late,
    });
    this.#observers.log(
      context,
      outcome,
      response.status,
      answered,
      failure,
      this.#handlerSteps?.get(context),
    );
  }

  /** Whatever threw where nothing should: answered 500 so the sender retries, and reported. */
  readonly #unexpected = (cause: unknown): WebhookResponse => {
    const error = new WebhookError(
      'internal_error',
      'service-webhooks failed unexpectedly while answering a delivery.',
      { cause },
    );
    this.#observers.report(error, undefined);
    return this.#answer({ started: 0 }, { code: error.code, error });
  };
}

/**
 * Create a webhook receiver. Options are checked here, and a mistake throws a `ConfigurationError`
 * that says what to change.
 *
 * @example
 * ```ts
 * import { createWebhooks } from 'service-webhooks';
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! });
 * webhooks.on('user.created', async (event) => {
 *   await sendWelcomeMail(event.data.email);
 * });
 * webhooks.on('payment.*', async (event, { signal }) => {
 *   await ledger.record(event, { signal });
 * });
 * ```
 */
export function createWebhooks(
  options: WebhooksOptions | TenantWebhooksOptions<EventSchemas, string>,
): Webhooks {
  return new WebhookReceiver(options as WebhooksOptions);
}

/** What a receiver with `tenant` cannot do: it has no secret of its own to verify or seal with. */
function withoutTenant(method: string): ConfigurationError {
  return new ConfigurationError(
    `\`${method}\` needs a receiver of one registration: a receiver with \`tenant\` verifies through \`handle()\`, which finds the tenant's secret from the request.`,
  );
}

/** Why `{ param }` found nothing where the adapter passed no route parameters (node:http, Fetch). */
function hintFor(input: HandleInput): string {
  return input.params === undefined
    ? " (this adapter passed no route parameters: with node:http or a Fetch runtime, read the path with `{ path: '/webhooks/:account' }`)"
    : '';
}

/** The receiver a run belongs to: every kind a receiver makes names it as the owner. */
function ownerOf<A>(run: Run<A>): WebhookReceiver {
  return run.kind.owner as WebhookReceiver;
}
