import { type ParseArgsConfig, parseArgs } from 'node:util';

/** A mistake on the command line: printed with a pointer to `--help`, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** The parsed flags of one command. */
export type Flags = Record<string, string | boolean | string[] | undefined>;

/**
 * Parse `argv` strictly against `options`: unknown flags and missing values are usage errors, so a
 * typo never silently sends something else.
 */
export function parseFlags(
  argv: readonly string[],
  options: Options,
  positionals = false,
): { flags: Flags; positionals: string[] } {
  try {
    const parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: positionals });
    return { flags: parsed.values as Flags, positionals: parsed.positionals };
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** A string flag, or `fallback` (`undefined` when the flag is required and absent is an error). */
export function stringFlag(flags: Flags, name: string, required: true): string;
export function stringFlag(flags: Flags, name: string, required: false): string | undefined;
export function stringFlag(flags: Flags, name: string, required: boolean): string | undefined {
  const value = flags[name];
  if (typeof value === 'string') return value;
  if (required) throw new UsageError(`--${name} is required.`);
  return undefined;
}

/** A numeric flag within bounds, or `fallback` when absent. */
export function numberFlag(
  flags: Flags,
  name: string,
  fallback: number,
  bounds: { min: number; max?: number; integer?: boolean },
): number {
  const raw = flags[name];
  if (typeof raw !== 'string') return fallback;
  const value = Number(raw);
  const { min, max = Number.MAX_SAFE_INTEGER, integer = true } = bounds;
  if (
    raw.trim() === '' ||
    !Number.isFinite(value) ||
    (integer && !Number.isInteger(value)) ||
    value < min ||
    value > max
  ) {
    const kind = integer ? 'an integer' : 'a number';
    throw new UsageError(
      `--${name} must be ${kind} from ${min}${max === Number.MAX_SAFE_INTEGER ? '' : ` to ${max}`}, got ${raw}.`,
    );
  }
  return value;
}

/** The flags `send` and `replay` share. */
export const SENDING_OPTIONS = {
  url: { type: 'string' },
  secret: { type: 'string' },
  repeat: { type: 'string' },
  concurrency: { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

/** Where the CLI writes: injectable so commands can run in-process. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
}
