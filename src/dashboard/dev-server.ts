import { randomBytes } from 'node:crypto';
import { EVENT_TYPES, type InboxAdmin, SENDER_SCHEDULE } from 'service-webhooks/core';
import type { Account } from '../sandbox/account.js';
import { keyAccount } from '../sandbox/api-keys.js';
import { sendJson } from '../sandbox/http-io.js';
import { newId } from '../sandbox/ids.js';
import { type Delivery, type Sandbox, startSandbox, type WebhookRegistration } from '../sandbox/index.js';
import { answerApi } from './dashboard-api.js';
import type { DashboardContext } from './dashboard-context.js';
import { toDevDelivery } from './dev-delivery.js';
import { DocsIndex } from './docs-index.js';
import { EventStream } from './event-stream.js';
import { ReportJoiner } from './report-join.js';
import { tokenRefusal } from './request-guard.js';
import { StaticAssets } from './static-assets.js';

/** Where the MCP endpoint for coding agents answers (see mcp-endpoint.ts). */
const MCP_PATH = '/mcp';

/**
 * The account the dashboard shows and sends from, whatever the key of this start: named after the key
 * every start used to have, so a data file kept since then keeps its history.
 */
const DEV_ACCOUNT = keyAccount('sk_test_dev');

/** A new sandbox key, for one start: a web page cannot guess it as it could a constant. */
function newApiKey(): string {
  return `sk_test_${randomBytes(24).toString('hex')}`;
}

/** How often the inbox's figures are read while a page listens. */
const INBOX_POLL_MS = 2_000;

/** How {@link startDevServer} runs. */
export interface DevServerOptions {
  /** The receiver's address: deliveries go there (http:// is allowed, as a local receiver is). */
  readonly forward: string;
  /** The webhook secret; the registration's saved one, else a new `whsec_…`, when omitted. */
  readonly secret?: string | undefined;
  /** @default 4010 */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** Multiplies the sender's retry delays. @default 1 */
  readonly timeScale?: number;
  /** @default SENDER_SCHEDULE.attemptTimeoutMs */
  readonly attemptTimeoutMs?: number;
  /** The history's file; in memory when omitted. */
  readonly dataFile?: string | undefined;
  /** Deliveries kept. @default 1000 */
  readonly historyLimit?: number;
  /** The folder of the built page (index.html, app.js, app.css). */
  readonly assetsFolder: string;
  /** The inbox the dashboard shows, through the same admin the CLI's `inbox` command uses. */
  readonly inbox?: InboxAdmin | undefined;
  /** The per-start token of the page; random when omitted (tests pass one). */
  readonly token?: string;
  /** The per-start token of the report address, which posts reports only; random when omitted. */
  readonly reportToken?: string;
  /**
   * The sandbox key scripts use (`Authorization: Bearer …`); a new random one at each start when
   * omitted. A fixed one is an opt-in (`--api-key`) for scripts that cannot read the banner; a page on
   * another site holding it is still refused, by the guard every route passes.
   */
  readonly apiKey?: string | undefined;
  /** One line per delivery attempt. */
  readonly log?: (line: string) => void;
  /** The docs' Markdown pages the MCP tool `search_docs` searches (the package's dist/docs). */
  readonly docsFolder?: string | undefined;
  /** The version the MCP endpoint names itself with. @default '0.0.0' */
  readonly version?: string | undefined;
}

/** A running dashboard and the sandbox it sits on. */
export interface DevServer {
  /** The dashboard's address, such as `http://127.0.0.1:4010/`. */
  readonly url: string;
  /** The sandbox API (`…/v1`), for scripts that create users and trigger events with {@link DevServer.apiKey}. */
  readonly apiUrl: string;
  /** The sandbox key of this start: the only one the API accepts (besides OAuth access tokens). */
  readonly apiKey: string;
  /** Where a receiver's devReporter posts, token included: the value of `SERVICE_WEBHOOKS_DEV_URL`. */
  readonly reportUrl: string;
  /** The registration's secret: the receiver verifies with it. */
  readonly secret: string;
  readonly token: string;
  /** The MCP endpoint for coding agents (Streamable HTTP), such as `http://127.0.0.1:4010/mcp`: the same token as the page's API. */
  readonly mcpUrl: string;
  readonly port: number;
  close(): Promise<void>;
}

function registrationFor(account: Account, forward: string, secret: string | undefined): WebhookRegistration {
  const existing = [...account.webhooks.values()].find((registration) => registration.url === forward);
  const wanted: WebhookRegistration = {
    id: existing?.id ?? newId('wh'),
    url: forward,
    events: [...EVENT_TYPES],
    secret: secret ?? existing?.secret ?? `whsec_${randomBytes(24).toString('hex')}`,
    created_at: existing?.created_at ?? new Date().toISOString(),
  };
  account.webhooks.set(wanted.id, wanted);
  account.changed();
  return wanted;
}

/**
 * Start `service-webhooks dev`: the sandbox on loopback, a webhook registered for the receiver at
 * `forward` (kept across restarts in the data file), and the dashboard at `/` of the same origin, live
 * over server-sent events.
 *
 * @example
 * ```ts
 * const dev = await startDevServer({ forward: 'http://localhost:3000/webhooks', port: 0, assetsFolder });
 * console.log(`dashboard at ${dev.url}, secret ${dev.secret}`);
 * await dev.close();
 * ```
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const token = options.token ?? randomBytes(24).toString('base64url');
  const reportToken = options.reportToken ?? randomBytes(24).toString('base64url');
  const apiKey = options.apiKey ?? newApiKey();
  const assets = await StaticAssets.load(options.assetsFolder, token);
  const stream = new EventStream();
  let unmatchedReports = 0;
  // A report nothing took is counted, logged and told to the pages: never dropped unsaid.
  const joiner = new ReportJoiner(({ report, why }) => {
    unmatchedReports++;
    const what = `${report.outcome} ${report.status}${report.eventId === undefined ? '' : ` of ${report.eventType ?? 'event'} ${report.eventId}`} at ${report.at} (pid ${report.pid})`;
    const reason =
      why === 'no_attempt'
        ? 'no delivery of this dashboard matched it (sent by another sender?)'
        : 'too many reports were waiting';
    const last = `unmatched report: ${what}: ${reason}`;
    options.log?.(`report ${last}`);
    stream.send({ type: 'unmatched', data: { count: unmatchedReports, last } });
  });
  const docs = new DocsIndex(options.docsFolder);
  let context: DashboardContext | undefined;
  let lastReportAt: string | null = null;

  const revisions = new Map<string, number>();
  const view = (delivery: Delivery) =>
    toDevDelivery(
      delivery,
      context?.account.webhooks.get(delivery.webhook_id)?.url ?? options.forward,
      sandbox.internals.scheduler.isSending(delivery.id),
      revisions.get(delivery.id) ?? 0,
    );
  // Each change of a delivery is a new revision (see DevDelivery.revision), sent to the pages at once.
  const changed = (delivery: Delivery) => {
    revisions.set(delivery.id, (revisions.get(delivery.id) ?? 0) + 1);
    const limit = options.historyLimit ?? 1000;
    if (revisions.size > 2 * limit && context !== undefined) {
      for (const id of revisions.keys()) if (!context.account.deliveries.has(id)) revisions.delete(id);
    }
    stream.send({ type: 'delivery', data: view(delivery) });
  };

  const sandbox: Sandbox = await startSandbox({
    port: options.port ?? 4010,
    host: options.host ?? '127.0.0.1',
    // Guarded whatever the address it is bound to: the dashboard acts on the receiver's secret.
    checkHost: true,
    allowHttp: true,
    apiKey,
    apiKeyAccount: DEV_ACCOUNT,
    timeScale: options.timeScale ?? 1,
    attemptTimeoutMs: options.attemptTimeoutMs ?? SENDER_SCHEDULE.attemptTimeoutMs,
    ...(options.dataFile !== undefined && { dataFile: options.dataFile }),
    ...(options.historyLimit !== undefined && { historyLimit: options.historyLimit }),
    log: options.log ?? (() => {}),
    onDeliveryChange(account, delivery) {
      if (context === undefined || account !== context.account) return;
      joiner.attemptRecorded(delivery);
      changed(delivery);
    },
    mount(request, response, url) {
      const isMcp = url.pathname === MCP_PATH;
      const isApi = url.pathname.startsWith('/_dev/api/') || isMcp;
      if (!isApi && !assets.has(url.pathname)) return undefined;
      // Host and Origin were checked by the sandbox, for every route; the API also needs a token.
      const refusal = isApi ? tokenRefusal(request, url, { page: token, report: reportToken }) : undefined;
      if (refusal !== undefined) {
        sendJson(response, refusal.status, { error: { code: refusal.code, message: refusal.message } });
        return Promise.resolve(refusal.status);
      }
      if (!isApi) return Promise.resolve(assets.serve(request, response, url.pathname));
      if (isMcp) {
        // Loaded on first use: a dev server no agent calls never evaluates the MCP SDK.
        return import('./mcp-endpoint.js').then(({ answerMcp }) =>
          answerMcp(
            {
              dashboard: context!,
              docs,
              secret: () => context!.registration().secret,
              version: options.version ?? '0.0.0',
            },
            request,
            response,
          ),
        );
      }
      return answerApi(context!, request, response, url, () => context!.registration().secret);
    },
  });
  const port = sandbox.port;
  const origin = sandbox.authUrl;
  const account = sandbox.internals.state.account(DEV_ACCOUNT);
  let registration = registrationFor(account, options.forward, options.secret);
  const reportUrl = `${origin}/_dev/api/report?token=${reportToken}`;
  context = {
    account,
    registration: () => {
      // Deleted or changed through the API meanwhile: put it back as the dashboard was started with.
      const current = account.webhooks.get(registration.id);
      if (current === undefined || current.url !== options.forward) {
        registration = registrationFor(account, options.forward, registration.secret);
      }
      return account.webhooks.get(registration.id)!;
    },
    scheduler: sandbox.internals.scheduler,
    stream,
    joiner,
    inbox: options.inbox,
    view,
    changed,
    issuedSamples: new Map(),
    reported(at) {
      lastReportAt = at;
      stream.send({ type: 'report', data: { at } });
    },
    state: () => ({
      forward: options.forward,
      secret_hint: registration.secret.slice(-4),
      time_scale: options.timeScale ?? 1,
      retry_delays_seconds: SENDER_SCHEDULE.retryDelaysSeconds,
      attempt_timeout_ms: options.attemptTimeoutMs ?? SENDER_SCHEDULE.attemptTimeoutMs,
      inbox: options.inbox?.engine ?? null,
      report_url: reportUrl,
      last_report_at: lastReportAt,
      history_limit: options.historyLimit ?? 1000,
      data_file: options.dataFile ?? null,
      unmatched_reports: unmatchedReports,
    }),
  };
  // Reports whose wait ended are given up even while no attempt comes to look at them.
  const expiry = setInterval(() => joiner.expire(), 1_000).unref();

  // The inbox's figures, pushed while a page listens; one read at a time, so a slow backend never
  // piles reads up.
  let polling = false;
  const inboxTimer =
    options.inbox === undefined
      ? undefined
      : setInterval(() => {
          const admin = options.inbox;
          if (admin === undefined || polling || stream.size === 0) return;
          polling = true;
          Promise.all([admin.stats(), admin.list({ limit: 50 })])
            .then(([stats, page]) =>
              stream.send({
                type: 'inbox',
                data: {
                  engine: admin.engine,
                  stats,
                  dead_letters: page.items,
                  more: page.total > page.items.length,
                },
              }),
            )
            .catch((error: unknown) => options.log?.(`could not read the inbox: ${String(error)}`))
            .finally(() => {
              polling = false;
            });
        }, INBOX_POLL_MS).unref();

  return {
    url: `${origin}/`,
    apiUrl: sandbox.url,
    apiKey,
    reportUrl,
    get secret() {
      return registration.secret;
    },
    token,
    mcpUrl: `${origin}${MCP_PATH}`,
    port,
    async close() {
      clearInterval(inboxTimer);
      clearInterval(expiry);
      stream.close();
      await sandbox.close();
    },
  };
}
