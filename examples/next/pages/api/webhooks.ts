import { nextPagesHandler } from 'service-webhooks/next';
import { createReceiver } from '../../lib/webhooks';

// The signature covers the exact bytes: Next.js must not parse the body of this route.
export const config = { api: { bodyParser: false } };

// POST /api/webhooks on the Pages Router.
export default nextPagesHandler(createReceiver());
