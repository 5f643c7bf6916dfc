import type { Account } from '../account.js';
import { invalidRequest, requestError } from '../api-errors.js';
import { newId } from '../ids.js';
import { paginate, parsePage } from '../pagination.js';
import { emailField, requireObject, stringField } from '../request-fields.js';
import type { User } from '../resources.js';
import type { Router } from '../router.js';
import { emit, type SandboxContext } from './context.js';

function userData(user: User) {
  return { object: 'user' as const, ...user };
}

/**
 * `/users`: create (201), list, retrieve, update (name and/or email, 200 with the whole user) and
 * delete (200 `{ id, deleted: true }`). An unknown or deleted user is 404 `user_not_found`. Each
 * change emits `user.created`, `user.updated` or `user.deleted`.
 */
export function registerUserRoutes(router: Router, context: SandboxContext): void {
  const find = (account: Account, id: string | undefined): User => {
    const user = id === undefined ? undefined : account.users.get(id);
    if (user === undefined) throw requestError(404, 'user_not_found', `No user with id ${id}.`);
    return user;
  };

  router.add('POST', '/users', ({ account, body, requestId }) => {
    const fields = requireObject(body);
    const user: User = {
      id: newId('usr'),
      name: stringField(fields, 'name', true),
      email: emailField(fields, 'email', true),
      created_at: new Date().toISOString(),
    };
    account.users.set(user.id, user);
    account.changed();
    emit(context, account, 'user.created', userData(user), requestId);
    return { status: 201, body: user };
  });

  router.add('GET', '/users', ({ account, query }) => ({
    status: 200,
    body: paginate([...account.users.values()], parsePage(query)),
  }));

  router.add('GET', '/users/:id', ({ account, params }) => ({ status: 200, body: find(account, params.id) }));

  router.add('PUT', '/users/:id', ({ account, params, body, requestId }) => {
    const user = find(account, params.id);
    const fields = requireObject(body);
    const name = stringField(fields, 'name', false);
    const email = emailField(fields, 'email', false);
    if (name === undefined && email === undefined) {
      throw invalidRequest('body', 'must hold name, email or both');
    }
    const updated: User = {
      ...user,
      ...(name !== undefined && { name }),
      ...(email !== undefined && { email }),
    };
    account.users.set(updated.id, updated);
    account.changed();
    emit(context, account, 'user.updated', userData(updated), requestId);
    return { status: 200, body: updated };
  });

  router.add('DELETE', '/users/:id', ({ account, params, requestId }) => {
    const user = find(account, params.id);
    account.users.delete(user.id);
    account.changed();
    emit(context, account, 'user.deleted', userData(user), requestId);
    return { status: 200, body: { id: user.id, deleted: true } };
  });
}
