/**
 * Where a Mermaid block's rendered SVG lives and what it is called for a screen reader: shared by the
 * renderer (scripts/docs/diagrams.mjs) and the site's Markdown hook, so both name a diagram by its text.
 */
import { createHash } from 'node:crypto';

/** The SVG's file name: a hash of the diagram's text, so an edited diagram is rendered anew. */
export function diagramFileName(source) {
  return `${createHash('sha256').update(source.trim()).digest('hex').slice(0, 16)}.svg`;
}

/** The diagram's `accTitle` (Mermaid's accessible title), which every diagram here must have. */
export function diagramTitle(source) {
  const title = /^\s*accTitle\s*:\s*(.+)$/m.exec(source)?.[1]?.trim();
  if (!title) throw new Error(`A diagram has no accTitle (its alt text):\n${source.slice(0, 200)}`);
  return title;
}
