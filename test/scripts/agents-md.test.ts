/**
 * AGENTS.md, the index coding agents read first (in the repository and in the package): it names the
 * version package.json has, stays near the 8 KB that an agent reads whole, makes the five decisions,
 * and every page it sends an agent to exists. Its TypeScript compiles with the docs' blocks
 * (test/docs/snippets.test.ts); the pack test checks that it ships.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../support/paths.js';

const text = readFileSync(repoPath('AGENTS.md'), 'utf8');
const { version } = JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { version: string };

describe('AGENTS.md', () => {
  it("names package.json's version, wherever it names one", () => {
    const named = [...text.matchAll(/service-webhooks@(\d+\.\d+\.\d+(?:-[\w.]+)?)/g)].map(
      (match) => match[1],
    );
    expect(named.length).toBeGreaterThan(0);
    expect(new Set(named)).toEqual(new Set([version]));
    // The release's own check agrees (it is what `npm run release:version` keeps true).
    expect(() =>
      execFileSync(process.execPath, [repoPath('scripts', 'sync-agents-version.mjs'), '--check'], {
        stdio: 'pipe',
      }),
    ).not.toThrow();
  });

  it('is about 8 KB: small enough for an agent to read whole', () => {
    const bytes = Buffer.byteLength(text);
    expect(bytes).toBeGreaterThan(6_000);
    expect(bytes).toBeLessThan(9_500);
  });

  it('makes the five decisions and gives the status table', () => {
    const decisions = [...text.matchAll(/^\*\*(\d)\. ([^*]+)\*\*/gm)].map((match) => [match[1], match[2]]);
    expect(decisions).toEqual([
      ['1', 'The framework adapter.'],
      ['2', 'The store'],
      ['3', 'Inbox or not.'],
      ['4', 'Schemas.'],
      ['5', 'Ordering.'],
    ]);
    for (const code of ['missing_signature', 'invalid_signature', 'event_in_progress', 'handler_failed']) {
      expect(text).toContain(code);
    }
  });

  it('sends agents only to pages the docs have', () => {
    const section = text.slice(text.indexOf('## The full documentation'));
    const pages = [...section.matchAll(/`([\w/-]+\.md)`/g)].map((match) => match[1]!);
    expect(pages.length).toBeGreaterThan(15);
    for (const page of pages) expect(existsSync(repoPath('docs', page)), page).toBe(true);
  });
});
