import type { Account } from '../account.js';
import { invalidRequest, requestError } from '../api-errors.js';
import { newId } from '../ids.js';
import { paginate, parsePage } from '../pagination.js';
import { requireObject, stringField } from '../request-fields.js';
import type { Project } from '../resources.js';
import type { Router } from '../router.js';
import { emit, type SandboxContext } from './context.js';

function projectData(project: Project) {
  return { object: 'project' as const, ...project };
}

// `description` may be a string or null (to clear it); absent means "leave as is".
function description(fields: Record<string, unknown>): string | null | undefined {
  return fields.description === null ? null : stringField(fields, 'description', false);
}

/**
 * `/projects`. The service documents only the list; the sandbox adds create (201, `name` required,
 * `description` optional), retrieve, update (200) and delete (200 `{ id, deleted: true }`) so project
 * events can be produced. An unknown project is 404 `project_not_found`.
 */
export function registerProjectRoutes(router: Router, context: SandboxContext): void {
  const find = (account: Account, id: string | undefined): Project => {
    const project = id === undefined ? undefined : account.projects.get(id);
    if (project === undefined) throw requestError(404, 'project_not_found', `No project with id ${id}.`);
    return project;
  };

  router.add('POST', '/projects', ({ account, body, requestId }) => {
    const fields = requireObject(body);
    const project: Project = {
      id: newId('prj'),
      name: stringField(fields, 'name', true),
      description: description(fields) ?? null,
      created_at: new Date().toISOString(),
    };
    account.projects.set(project.id, project);
    account.changed();
    emit(context, account, 'project.created', projectData(project), requestId);
    return { status: 201, body: project };
  });

  router.add('GET', '/projects', ({ account, query }) => ({
    status: 200,
    body: paginate([...account.projects.values()], parsePage(query)),
  }));

  router.add('GET', '/projects/:id', ({ account, params }) => ({
    status: 200,
    body: find(account, params.id),
  }));

  router.add('PUT', '/projects/:id', ({ account, params, body, requestId }) => {
    const project = find(account, params.id);
    const fields = requireObject(body);
    const name = stringField(fields, 'name', false);
    const text = description(fields);
    if (name === undefined && text === undefined) {
      throw invalidRequest('body', 'must hold name, description or both');
    }
    const updated: Project = {
      ...project,
      ...(name !== undefined && { name }),
      ...(text !== undefined && { description: text }),
    };
    account.projects.set(updated.id, updated);
    account.changed();
    emit(context, account, 'project.updated', projectData(updated), requestId);
    return { status: 200, body: updated };
  });

  router.add('DELETE', '/projects/:id', ({ account, params, requestId }) => {
    const project = find(account, params.id);
    account.projects.delete(project.id);
    account.changed();
    emit(context, account, 'project.deleted', projectData(project), requestId);
    return { status: 200, body: { id: project.id, deleted: true } };
  });
}
