#!/usr/bin/env node
/**
 * AGENTS.md names the version it describes (`service-webhooks@x.y.z`), so an agent reading the copy in
 * node_modules knows it matches the code beside it. `npm run release:version` runs this after
 * `changeset version` bumps package.json; test/scripts/agents-md.test.ts fails when the two differ.
 * `--check` only reports, exiting 1 on a mismatch.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const VERSION_MENTION = /service-webhooks@\d+\.\d+\.\d+(?:-[\w.]+)?/g;
const { version } = JSON.parse(readFileSync(`${root}package.json`, 'utf8'));
const path = `${root}AGENTS.md`;
const text = readFileSync(path, 'utf8');
const synced = text.replace(VERSION_MENTION, `service-webhooks@${version}`);
if (process.argv.includes('--check')) {
  if (synced !== text) {
    console.error(
      `AGENTS.md names another version than package.json's ${version}: run node scripts/sync-agents-version.mjs`,
    );
    process.exit(1);
  }
} else if (synced !== text) {
  writeFileSync(path, synced);
  console.log(`AGENTS.md now describes service-webhooks@${version}`);
}
