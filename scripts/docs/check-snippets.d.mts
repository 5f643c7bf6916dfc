/** Types of check-snippets.mjs, for the test that runs it. */
export function checkSnippets(options?: { pages?: string[] }): Promise<{
  blocks: number;
  errors: { page: string; line: number; message: string }[];
}>;
export const SHOWN_AS_WRITTEN: string[];
