/** Types of links.mjs, for the test that proves the link check. */
export const REPOSITORY: string;
export const SITE: string;
export const HOMEPAGE: string;
export const SITE_BASE: string;
export function checkLinks(site: { outDir: string; base: string }): {
  links: number;
  broken: { page: string; href: string; reason: string }[];
};
