/** Types of snippets.mjs, for the TypeScript tests that read the documentation's blocks. */
export interface DocumentationBlock {
  lang: string;
  meta: string;
  code: string;
  line: number;
  id: string | undefined;
}
export const ROOT: string;
export const DOCS: string;
export const CUT: string;
export const TYPESCRIPT_LANGUAGES: Set<string>;
export function documentationFiles(): string[];
export function extractBlocks(markdown: string): DocumentationBlock[];
export function visibleCode(code: string): string;
export function docBlock(page: string, id: string): DocumentationBlock;
