#!/usr/bin/env node
import { run } from './run.js';

// The `service-webhooks` bin. No top-level await: this file is also bundled as CommonJS.
run(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`service-webhooks: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
