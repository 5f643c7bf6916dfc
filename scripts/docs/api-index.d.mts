/** Types of api-index.mjs, for its test. */
export const API_GROUPS: readonly {
  readonly title: string;
  readonly modules: Readonly<Record<string, string>>;
}[];
export function apiIndex(generated: string): string;
