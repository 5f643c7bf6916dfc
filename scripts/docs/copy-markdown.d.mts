/** Types of copy-markdown.mjs, for the tests that check the shipped pages. */
export function copyDocsMarkdown(outDir?: string): { pages: number; bytes: number };
