import { nextRouteHandler } from 'service-webhooks/next';
import { createReceiver } from '../../lib/webhooks';

// POST /webhooks on the Node.js runtime. Next.js answers other methods 405 itself.
export const POST = nextRouteHandler(createReceiver());
