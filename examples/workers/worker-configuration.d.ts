// The part of what `wrangler types` generates that this Worker uses: its bindings, as the env that
// `cloudflare:workers` exports. A project with @cloudflare/workers-types gets the module from there.
declare module 'cloudflare:workers' {
  export const env: {
    /** `wrangler secret put WEBHOOK_SECRET` (deployed), .dev.vars (local). */
    readonly WEBHOOK_SECRET: string;
  };
}
