/**
 * The bench's logger: what the bench, and the server and stages it starts in this process, log is shown between
 * its progress lines as plain text ("warning: ...") on stderr, not as pino's JSON records (a JSON line was the
 * first thing a bench run printed). Levels as CHORUS_LOG_LEVEL says (the CLI defaults it to warn for the bench).
 */
import { pino, type Logger } from 'pino';

const LEVEL_WORDS: Readonly<Record<number, string>> = {
  10: 'trace',
  20: 'debug',
  30: '',
  40: 'warning',
  50: 'error',
  60: 'fatal',
};
/** pino's own record fields: the rest of a record is its context, shown after the message. */
const RECORD_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'component', 'file']);

/** One pino record (a JSON line) as a line a person reads: `warning: <msg> (key=value ...)`. */
export function plainLogLine(record: string): string {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(record) as Record<string, unknown>;
  } catch {
    return record.trimEnd();
  }
  const word = LEVEL_WORDS[Number(r.level)] ?? '';
  const context = Object.entries(r)
    .filter(([k]) => !RECORD_FIELDS.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : k === 'err' ? errorText(v) : JSON.stringify(v)}`);
  const msg = typeof r.msg === 'string' ? r.msg : '';
  return `${word ? `${word}: ` : ''}${msg}${context.length > 0 ? ` (${context.join(', ')})` : ''}`;
}

/** pino serializes an error as {type, message, stack}: its message is what a reader needs. */
function errorText(v: unknown): string {
  const message = (v as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : JSON.stringify(v);
}

export function benchLogger(out: NodeJS.WritableStream, level = process.env.CHORUS_LOG_LEVEL ?? 'warn'): Logger {
  return pino(
    { name: 'chorus', level, base: null },
    { write: (record: string) => out.write(`${plainLogLine(record)}\n`) },
  );
}
