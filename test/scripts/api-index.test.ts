/** The API reference's front page (scripts/docs/api-index.mjs): grouped as the guide, one sentence a module. */
import { describe, expect, it } from 'vitest';
import { API_GROUPS, apiIndex } from '../../scripts/docs/api-index.mjs';
import { specifier, subpaths } from '../../subpaths.mjs';

/** TypeDoc's own front page: a bare list of the modules, linked (the shape the build rewrites). */
const typedocIndex = (names: readonly string[]) =>
  `# API reference\n\n## Modules\n\n| Module | Description |\n| ------ | ------ |\n${names
    .map((name) => `| [${specifier(name)}](${specifier(name)}/index.md) | - |`)
    .join('\n')}\n`;

describe('the API index', () => {
  it('has every public subpath once, with a sentence', () => {
    const listed = API_GROUPS.flatMap((group) => Object.keys(group.modules));
    expect([...listed].sort()).toEqual(Object.keys(subpaths).sort());
    for (const group of API_GROUPS) {
      for (const sentence of Object.values(group.modules)) expect(sentence).toMatch(/^\S.{20,}\.$/);
    }
  });

  it("rewrites TypeDoc's list as the sidebar's groups, keeping its links", () => {
    const page = apiIndex(typedocIndex(Object.keys(subpaths)));
    const headings = [...page.matchAll(/^## (.+)$/gm)].map((match) => match[1]);
    expect(headings).toEqual(API_GROUPS.map((group) => group.title));
    expect(page).toContain(
      `- [\`service-webhooks/redis\`](service-webhooks/redis/index.md): ${API_GROUPS[2]!.modules.redis}`,
    );
    expect(page.match(/^- \[/gm)).toHaveLength(Object.keys(subpaths).length);
  });

  it('fails the build when TypeDoc made no page for a module', () => {
    expect(() => apiIndex(typedocIndex(Object.keys(subpaths).filter((name) => name !== 'sqs')))).toThrow(
      /no page for service-webhooks\/sqs/,
    );
  });
});
