import { type AnyWebhooks, createWebhooks } from 'service-webhooks';
import { z } from 'zod';

const schemas = { 'user.created': z.object({ id: z.string() }).loose() };
const a: AnyWebhooks = createWebhooks({ secret: 'x', schemas });
const c: AnyWebhooks = createWebhooks({ tenant: { from: { param: 'a' }, secret: () => 'x' } });
const d: AnyWebhooks = createWebhooks({
  schemas,
  tenant: { from: (r) => r.header('x') as `acct_${string}` | undefined, secret: () => 'x' },
});

export { a, c, d };
