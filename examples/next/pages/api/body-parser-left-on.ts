import { nextPagesHandler } from 'service-webhooks/next';
import { createReceiver } from '../../lib/webhooks';

// A deliberate mistake, kept to show the failure: without `export const config = { api: { bodyParser:
// false } }` Next.js parses the body first, and every delivery is answered 500 raw_body_unavailable
// with an error (to onError, or stderr) that names that fix.
export default nextPagesHandler(createReceiver());
