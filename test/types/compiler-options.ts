import ts from 'typescript';
import { ROOT } from '../support/paths.js';

/**
 * The compiler options of a strict NodeNext consumer, as the type tests that run tsc on a fixture use
 * them: no `noErrorTruncation`, since a message tsc elides is not one the user reads. `baseUrl` lets a
 * test map the package's names (`paths`) to the sources or to dist/.
 */
export const CONSUMER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  types: ['node'],
  baseUrl: ROOT,
};
