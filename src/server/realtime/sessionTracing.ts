/**
 * session.tracing (OpenAI's: "auto", {workflow_name, group_id, metadata}, or null) on Chorus's OpenTelemetry tracing
 * (docs/tracing.md). Every response of a session is a `realtime.response` span when the server exports traces; the
 * session's tracing setting names them: its workflow name, group id and metadata become the spans' attributes
 * (chorus.workflow_name, chorus.group_id, chorus.metadata.<key>), "auto" names the workflow "Realtime Session".
 * null asks for no names (the server still traces what its operator configured). A server with no exporter records
 * nothing: the setting is taken and kept, and session.updated says tracing is off (chorus_tracing), never silently.
 */
import type { Attributes } from '@opentelemetry/api';
import { ClientInputError } from '../validate.ts';

export interface TracingConfig {
  readonly workflow_name?: string;
  readonly group_id?: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
}
export type TracingSetting = 'auto' | TracingConfig | null;

const PARAM = 'session.tracing';
const FIELDS = ['workflow_name', 'group_id', 'metadata'];
const MAX_NAME = 256;
const MAX_METADATA_KEYS = 16;
export const AUTO_WORKFLOW_NAME = 'Realtime Session';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkName(value: unknown, field: string): void {
  if (value !== undefined && (typeof value !== 'string' || value.length > MAX_NAME))
    throw new ClientInputError(
      `${PARAM}.${field} must be a string of at most ${MAX_NAME} characters`,
      `${PARAM}.${field}`,
    );
}

/** The setting session.update gives; a bad value is refused naming its field. */
export function parseTracing(value: unknown): TracingSetting {
  if (value === null || value === 'auto') return value;
  if (!isObject(value))
    throw new ClientInputError(`${PARAM} must be "auto", null or {workflow_name?, group_id?, metadata?}`, PARAM);
  const unknown = Object.keys(value).find((k) => !FIELDS.includes(k));
  if (unknown !== undefined)
    throw new ClientInputError(
      `${PARAM}.${unknown} is not a field of ${PARAM} (its fields: ${FIELDS.join(', ')})`,
      PARAM,
    );
  checkName(value.workflow_name, 'workflow_name');
  checkName(value.group_id, 'group_id');
  const { metadata } = value;
  if (metadata !== undefined && (!isObject(metadata) || Object.keys(metadata).length > MAX_METADATA_KEYS))
    throw new ClientInputError(
      `${PARAM}.metadata must be an object of at most ${MAX_METADATA_KEYS} keys`,
      `${PARAM}.metadata`,
    );
  return value as TracingConfig;
}

/** The attributes the session's response spans carry. */
export function tracingAttributes(setting: TracingSetting): Attributes {
  if (setting === null) return {};
  if (setting === 'auto') return { 'chorus.workflow_name': AUTO_WORKFLOW_NAME };
  const attributes: Attributes = {};
  if (setting.workflow_name !== undefined) attributes['chorus.workflow_name'] = setting.workflow_name;
  if (setting.group_id !== undefined) attributes['chorus.group_id'] = setting.group_id;
  for (const [key, value] of Object.entries(setting.metadata ?? {}))
    attributes[`chorus.metadata.${key.slice(0, 64)}`] = typeof value === 'string' ? value : JSON.stringify(value);
  return attributes;
}

/** Chorus extension beside session.tracing: whether anything is recorded. */
export function tracingStatus(serverTracing: boolean): string {
  return serverTracing
    ? 'on: each response is a realtime.response OpenTelemetry span, named by session.tracing (docs/tracing.md)'
    : 'off: this server exports no traces (no OTEL_EXPORTER_OTLP_ENDPOINT; docs/tracing.md), so session.tracing ' +
        'is kept but nothing is recorded';
}
