/**
 * The recipes' runnable blocks, run as a reader runs them (in one project made as Getting started says,
 * the packed build for service-webhooks; each file saved and run as its page says), each asserting what
 * its page promises: docs/recipes/secret-rotation.md (a retry signed with the new secret is a duplicate
 * of the delivery the old one signed), docs/recipes/several-registrations.md (one event, two
 * registrations on one store: each runs it once, each retry is a duplicate), docs/recipes/tenants.md
 * (three accounts on one receiver: each runs the shared id once, a replay across accounts is 401) and
 * docs/recipes/testing-handlers.md (the vitest file passes under vitest).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandOnPage, docBlock, gettingStartedProject, type ReaderProject } from './support.js';

let project: ReaderProject;

beforeAll(async () => {
  project = await gettingStartedProject('recipes');
}, 180_000);

afterAll(() => {
  project?.remove();
});

describe('docs/recipes/secret-rotation.md', () => {
  const PAGE = 'docs/recipes/secret-rotation.md';
  it('rotation-overlap: the old secret signs the first delivery (index 1), the retry signed with the new one is a duplicate', async () => {
    project.save(docBlock(PAGE, 'rotation-overlap'), 'rotation.ts');
    const { stdout } = await project.shell(commandOnPage(PAGE, 'npx tsx rotation.ts'));
    const handled = stdout.split('\n').filter((line) => line.startsWith('handled '));
    expect(handled).toHaveLength(1);
    expect(handled[0]).toMatch(/^handled evt_\w+, signed with secret 1$/);
    expect(stdout).toContain('first: 200, retry: 200 duplicate=true');
  });
});

describe('docs/recipes/several-registrations.md', () => {
  const PAGE = 'docs/recipes/several-registrations.md';
  it('two-registrations: each registration runs the shared event id once; each retry is a duplicate', async () => {
    project.save(docBlock(PAGE, 'two-registrations'), 'registrations.ts');
    const { stdout, stderr } = await project.shell(commandOnPage(PAGE, 'npx tsx registrations.ts'));
    const lines = stdout.trim().split('\n');
    const id = /^billing handled (evt_\w+)$/.exec(lines[0] ?? '')?.[1];
    expect(id).toBeDefined();
    expect(lines).toEqual([
      `billing handled ${id}`,
      'billing: 200 duplicate=no',
      `crm handled ${id}`,
      'crm: 200 duplicate=no',
      'billing: 200 duplicate=true',
      'crm: 200 duplicate=true',
    ]);
    // Own secrets: no shared-scope warning.
    expect(stderr).not.toContain('share one store');
  });
});

describe('docs/recipes/tenants.md', () => {
  const PAGE = 'docs/recipes/tenants.md';
  it('three-tenants: each account runs the shared event id once; a retry is a duplicate for one account; replay and unknown refused', async () => {
    project.save(docBlock(PAGE, 'three-tenants'), 'tenants.ts');
    const { stdout } = await project.shell(commandOnPage(PAGE, 'npx tsx tenants.ts'));
    const lines = stdout.trim().split('\n');
    const id = /^acme handled (evt_\w+)$/.exec(lines[0] ?? '')?.[1];
    expect(id).toBeDefined();
    expect(lines).toEqual([
      `acme handled ${id}`,
      'acme: 200 ok',
      `globex handled ${id}`,
      'globex: 200 ok',
      `initech handled ${id}`,
      'initech: 200 ok',
      'acme: 200 duplicate',
      'globex: 401 invalid_signature',
      'hooli: 404 unknown_tenant',
    ]);
  });
});

describe('docs/recipes/testing-handlers.md', () => {
  const PAGE = 'docs/recipes/testing-handlers.md';
  it('vitest-example: the page’s test file passes under vitest', async () => {
    await project.shell(commandOnPage(PAGE, 'npm install --save-dev vitest'));
    project.save(docBlock(PAGE, 'vitest-example'), 'receiver.test.ts');
    // The page's command, with a JSON report added for the test to read which tests passed.
    await project.shell(`${commandOnPage(PAGE, 'npx vitest run')} --reporter=json --outputFile=report.json`, {
      FORCE_COLOR: '0',
    });
    const result = JSON.parse(await readFile(join(project.dir, 'report.json'), 'utf8')) as {
      testResults: { name: string; assertionResults: { title: string; status: string }[] }[];
    };
    expect(result.testResults.map((file) => file.name)).toEqual([join(project.dir, 'receiver.test.ts')]);
    expect(result.testResults[0]!.assertionResults.map((test) => [test.title, test.status])).toEqual([
      ['a payment is handled once, its retry is a duplicate', 'passed'],
      ['a failing handler is answered 500, so the service retries', 'passed'],
      ['a forged signature is refused before any handler runs', 'passed'],
    ]);
  }, 180_000);
});
