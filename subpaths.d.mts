/** Types of subpaths.mjs (plain JavaScript, so that `npm run sync:subpaths` runs on plain node). */

/** Subpath name (`index` is the root) → the source file its bundle is built from. */
export declare const subpaths: Readonly<Record<string, string>>;
export declare const PACKAGE_NAME: 'service-webhooks';
export declare function specifier(name: string): string;

export interface ConditionalExport {
  import: { types: string; default: string };
  require: { types: string; default: string };
}
export declare function packageExports(): Record<string, ConditionalExport | string>;
export declare function packageTypesVersions(): { '*': Record<string, string[]> };
export declare function tsconfigPaths(): Record<string, string[]>;
export declare function tsupEntries(): Record<string, string>;
export declare function vitestAliases(root: string): Record<string, string>;
