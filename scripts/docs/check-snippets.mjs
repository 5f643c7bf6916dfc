/**
 * Compile every TypeScript block of the documentation against the built package, as one program (one
 * type-check of ~200 small files takes seconds; one tsc per block would take minutes). Each block is
 * written to .docs-snippets/ inside the repository, so `import … from 'service-webhooks'` resolves
 * through the package's own `exports` to dist/ (Node and TypeScript resolve a package's own name from
 * inside it), exactly as in a user's project, and the peers (express, ioredis, …) from node_modules.
 *
 * Run on its own: `node scripts/docs/check-snippets.mjs` (after `npm run build`). Exits 1 and prints
 * each error at its page's line when a block does not compile.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CUT, documentationFiles, extractBlocks, ROOT, TYPESCRIPT_LANGUAGES } from './snippets.mjs';

/**
 * The pages read as written, with no site to hide lines: the README (GitHub, npm) and AGENTS.md (coding
 * agents, from the repository or the package). AGENTS.md is no page of the site, so it is checked here
 * beside documentationFiles().
 */
export const SHOWN_AS_WRITTEN = ['README.md', 'AGENTS.md'];

/**
 * Type-check the blocks of `pages` (paths from the root, or absolute; by default every page); resolves to the errors found (empty when every block compiles), each with
 * the page and line it points at.
 * @returns {Promise<{ blocks: number, errors: { page: string, line: number, message: string }[] }>}
 */
export async function checkSnippets({ pages = [...documentationFiles(), 'AGENTS.md'] } = {}) {
  if (!existsSync(join(ROOT, 'dist', 'index.d.ts'))) {
    throw new Error('The snippets compile against the built package: run `npm run build` first.');
  }
  const ts = createRequire(join(ROOT, 'package.json'))('typescript');
  // A folder per check, so a test and a docs build running at once never delete each other's files.
  mkdirSync(join(ROOT, '.docs-snippets'), { recursive: true });
  const OUT = mkdtempSync(join(ROOT, '.docs-snippets', 'check-'));
  const origins = new Map();
  const hidden = [];
  for (const page of pages) {
    const blocks = extractBlocks(readFileSync(isAbsolute(page) ? page : join(ROOT, page), 'utf8'));
    blocks.forEach((block, index) => {
      if (!TYPESCRIPT_LANGUAGES.has(block.lang)) return;
      // GitHub and npm show the README as written, and agents read AGENTS.md as written: a hidden line
      // would be shown there.
      if (SHOWN_AS_WRITTEN.includes(page) && block.code.split('\n').some((line) => line.trim() === CUT)) {
        hidden.push({
          page,
          line: block.line,
          message: `${page} cannot hide lines (${CUT}): it is read as written.`,
        });
      }
      const file = join(OUT, `${page.replace(/^\//, '').replace(/[/.]/g, '_')}--${index + 1}.ts`);
      // `export {}` makes a block without imports a module too, so blocks never share globals.
      writeFileSync(file, `${block.code}\nexport {};\n`);
      origins.set(file, {
        page,
        line: block.line,
        augments: /^\s*declare\s+(module\s+['"]|global\b)/m.test(block.code),
      });
    });
  }
  const options = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    skipLibCheck: true,
    esModuleInterop: true,
    exactOptionalPropertyTypes: false,
  };
  // A block that augments a module (`declare module 'service-webhooks'`) or the globals changes the
  // types every file of its program sees: each such block is a program of its own, so another block
  // cannot compile only thanks to it. The rest share one program (one check of all is seconds).
  const augments = (file) => origins.get(file).augments;
  const files = [...origins.keys()];
  const groups = [files.filter((file) => !augments(file)), ...files.filter(augments).map((file) => [file])];
  let oldProgram;
  const diagnostics = groups.flatMap((group) => {
    const program = ts.createProgram({ rootNames: group, options, oldProgram });
    oldProgram = program;
    return [...ts.getPreEmitDiagnostics(program)];
  });
  const errors = diagnostics.map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const origin = diagnostic.file && origins.get(diagnostic.file.fileName);
    if (!origin) return { page: diagnostic.file?.fileName ?? '(options)', line: 0, message };
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    return { page: origin.page, line: origin.line + line, message };
  });
  rmSync(OUT, { recursive: true, force: true });
  return { blocks: origins.size, errors: [...hidden, ...errors] };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { blocks, errors } = await checkSnippets();
  for (const { page, line, message } of errors) console.error(`${page}:${line}: ${message}`);
  if (errors.length > 0) {
    console.error(`\n${errors.length} error(s) in the documentation's TypeScript blocks (${blocks} blocks).`);
    process.exit(1);
  }
  console.log(`docs: ${blocks} TypeScript blocks compile against the built package.`);
}
