import { invalidRequest, requestError } from '../api-errors.js';
import { newId } from '../ids.js';
import type { Router } from '../router.js';
import type { Project } from '../store.js';
import { paginate, parsePage, requireObject, stringField } from '../validation.js';
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
  const { store } = context;
  const find = (id: string | undefined): Project => {
    const project = id === undefined ? undefined : store.projects.get(id);
    if (project === undefined) throw requestError(404, 'project_not_found', `No project with id ${id}.`);
    return project;
  };

  router.add('POST', '/projects', ({ body, requestId }) => {
    const fields = requireObject(body);
    const project: Project = {
      id: newId('prj'),
      name: stringField(fields, 'name', true),
      description: description(fields) ?? null,
      created_at: new Date().toISOString(),
    };
    store.projects.set(project.id, project);
    store.changed();
    emit(context, 'project.created', projectData(project), requestId);
    return { status: 201, body: project };
  });

  router.add('GET', '/projects', ({ query }) => ({
    status: 200,
    body: paginate([...store.projects.values()], parsePage(query)),
  }));

  router.add('GET', '/projects/:id', ({ params }) => ({ status: 200, body: find(params.id) }));

  router.add('PUT', '/projects/:id', ({ params, body, requestId }) => {
    const project = find(params.id);
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
    store.projects.set(updated.id, updated);
    store.changed();
    emit(context, 'project.updated', projectData(updated), requestId);
    return { status: 200, body: updated };
  });

  router.add('DELETE', '/projects/:id', ({ params, requestId }) => {
    const project = find(params.id);
    store.projects.delete(project.id);
    store.changed();
    emit(context, 'project.deleted', projectData(project), requestId);
    return { status: 200, body: { id: project.id, deleted: true } };
  });
}
