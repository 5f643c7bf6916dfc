/**
 * A TypeDoc plugin: name each module of the API reference as users import it (`service-webhooks/redis`)
 * rather than by its source file (`src/stores/redis-store`), from subpaths.mjs, the package's one list of
 * public subpaths. It lives beside the site because it imports TypeDoc, which only the site installs.
 */
import { Converter, ReflectionKind } from 'typedoc';
import { specifier, subpaths } from '../../subpaths.mjs';

const bySource = new Map(
  Object.entries(subpaths).map(([name, source]) => [source.replace(/\.ts$/, ''), name]),
);

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      const fileName = module.sources?.[0]?.fileName?.replace(/\.ts$/, '');
      const name = (fileName && bySource.get(fileName)) ?? bySource.get(module.name);
      if (name) module.name = specifier(name);
    }
  });
}
