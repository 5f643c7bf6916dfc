import { nextRouteHandler } from 'service-webhooks/next';
import { createReceiver } from '../../../lib/webhooks';

// POST /webhooks/edge on the Edge runtime: the same handler, verified with Web Crypto.
export const runtime = 'edge';
export const POST = nextRouteHandler(createReceiver());
