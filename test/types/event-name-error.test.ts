/**
 * What tsc says about a misspelled event name (issue 36): the `@ts-expect-error` lines in
 * handlers.test-d.ts prove that it is refused, not what the user reads. Here the message itself: one
 * error, on the name, naming every event type and wildcard. The names come from EVENT_TYPES, which
 * event-types.test-d.ts holds equal to the keys of WebhookEventMap, so a type added to the map is
 * expected in the message too.
 */
import { fileURLToPath } from 'node:url';
import { EVENT_TYPES } from 'service-webhooks';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { CONSUMER_OPTIONS } from './compiler-options.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const SINGLE = fixture('misspelled-event-name.ts');
const IN_ARRAY = fixture('misspelled-event-name-in-array.ts');

const WILDCARDS = [...new Set(EVENT_TYPES.map((type) => `${type.slice(0, type.indexOf('.'))}.*`))];

// One program for both fixtures; the options are a consumer's defaults (no `noErrorTruncation`), since
// a message tsc elides is not one the user reads.
const program = ts.createProgram([SINGLE, IN_ARRAY], {
  ...CONSUMER_OPTIONS,
  paths: { 'service-webhooks': ['./src/index.ts'], 'service-webhooks/core': ['./src/core.ts'] },
});

function errorsIn(file: string) {
  const source = program.getSourceFile(file);
  if (!source) throw new Error(`${file} is not in the program`);
  return ts.getPreEmitDiagnostics(program, source).map((diagnostic) => ({
    code: diagnostic.code,
    at: diagnostic.start === undefined ? '' : source.text.slice(diagnostic.start, diagnostic.start + 14),
    message: ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'),
  }));
}

describe('a misspelled event name is one error that lists the valid names', () => {
  test('on one name: the name is refused, the handler is not blamed', () => {
    const errors = errorsIn(SINGLE);
    expect(errors, JSON.stringify(errors, null, 2)).toHaveLength(1);
    const [error] = errors;
    expect(error?.at).toBe(`'user.craeted'`);
    expect(error?.message).toMatch(/^Argument of type '"user\.craeted"' is not assignable to parameter/);
    // The map's name for the type is what tsc printed before: it says nothing to a user.
    expect(error?.message).not.toContain('keyof');
    for (const name of [...EVENT_TYPES, ...WILDCARDS]) expect(error?.message).toContain(`"${name}"`);
  });

  test('in an array: the wrong element is refused, with a suggestion and the list', () => {
    const errors = errorsIn(IN_ARRAY);
    expect(errors, JSON.stringify(errors, null, 2)).toHaveLength(1);
    const [error] = errors;
    expect(error?.at).toBe(`'user.craeted'`);
    expect(error?.message).toMatch(/Did you mean '"user\.created"'\?/);
    for (const name of [...EVENT_TYPES, ...WILDCARDS]) expect(error?.message).toContain(`"${name}"`);
  });
});
