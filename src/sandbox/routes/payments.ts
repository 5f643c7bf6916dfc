import { invalidRequest, requestError } from '../api-errors.js';
import { newId } from '../ids.js';
import { paginate, parsePage } from '../pagination.js';
import { requireObject, stringField } from '../request-fields.js';
import type { Payment, PaymentStatus } from '../resources.js';
import type { Router } from '../router.js';
import { emit, type SandboxContext } from './context.js';

const OUTCOMES: readonly PaymentStatus[] = ['succeeded', 'failed', 'refunded'];

function paymentData(payment: Payment) {
  return { object: 'payment' as const, ...payment };
}

function amountField(fields: Record<string, unknown>): number {
  const amount = fields.amount ?? 2500;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) {
    throw invalidRequest('amount', 'must be a positive integer (minor units, such as cents)');
  }
  return amount;
}

function currencyField(fields: Record<string, unknown>): string {
  const currency = stringField(fields, 'currency', false) ?? 'usd';
  if (!/^[a-z]{3}$/.test(currency)) throw invalidRequest('currency', 'must be a three-letter lowercase code');
  return currency;
}

/**
 * Sandbox-only payment trigger, since the service shows no payment operations:
 * `POST /sandbox/payments` with `{ outcome: 'succeeded' | 'failed' | 'refunded', amount?, currency? }`
 * creates a payment in that state (201) and emits `payment.<outcome>`; with `outcome: 'refunded'` and
 * `payment: <id>` it refunds an existing succeeded payment instead (200). `GET /sandbox/payments` lists.
 */
export function registerPaymentRoutes(router: Router, context: SandboxContext): void {
  router.add('POST', '/sandbox/payments', ({ account, body, requestId }) => {
    const fields = requireObject(body);
    const outcome = fields.outcome;
    if (typeof outcome !== 'string' || !(OUTCOMES as readonly string[]).includes(outcome)) {
      throw invalidRequest('outcome', `must be one of ${OUTCOMES.join(', ')}`);
    }
    const status = outcome as PaymentStatus;
    const existingId = stringField(fields, 'payment', false);
    if (existingId !== undefined) {
      if (status !== 'refunded') throw invalidRequest('payment', 'may be given only with outcome refunded');
      const payment = account.payments.get(existingId);
      if (payment === undefined)
        throw requestError(404, 'payment_not_found', `No payment with id ${existingId}.`);
      if (payment.status !== 'succeeded')
        throw invalidRequest('payment', 'only a succeeded payment can be refunded');
      const refunded: Payment = { ...payment, status: 'refunded' };
      account.payments.set(refunded.id, refunded);
      account.changed();
      emit(context, account, 'payment.refunded', paymentData(refunded), requestId);
      return { status: 200, body: refunded };
    }
    const payment: Payment = {
      id: newId('pay'),
      amount: amountField(fields),
      currency: currencyField(fields),
      status,
      created_at: new Date().toISOString(),
    };
    account.payments.set(payment.id, payment);
    account.changed();
    emit(context, account, `payment.${status}`, paymentData(payment), requestId);
    return { status: 201, body: payment };
  });

  router.add('GET', '/sandbox/payments', ({ account, query }) => ({
    status: 200,
    body: paginate([...account.payments.values()], parsePage(query)),
  }));
}
