/**
 * `connectors:` -> ConnectorSpec per name. The kind must be one transport/registry.ts builds and that links separate
 * processes (every stage runs in its own): one that only works within a process is refused with the reason. Its
 * options are checked against that kind's schema and defaulted, with keys in camelCase (ring_bytes -> ringBytes),
 * the names the transport layer reads.
 */
import type { ConnectorKind, ConnectorSpec } from '../common/graph.ts';
import { allConnectorKinds, connectorKinds, kindEntry } from '../../transport/registry.ts';
import { defaults } from './defaults.ts';
import { suggest, type Problems } from './problems.ts';
import { check } from './validate.ts';

const namePattern = /^[a-z0-9]+([-_][a-z0-9]+)*$/;

export function resolveConnectors(
  raw: Readonly<Record<string, { kind: string; options?: Record<string, unknown> }>> | undefined,
  problems: Problems,
): Record<string, ConnectorSpec> {
  if (raw === undefined) {
    const name = defaults.connectorName;
    return { [name]: { name, kind: 'shm', options: connectorKinds.shm.resolveOptions({}) } };
  }
  const out: Record<string, ConnectorSpec> = {};
  if (Object.keys(raw).length === 0)
    problems.add(['connectors'], 'must define at least one connector (or leave the section out for one shm connector)');
  const built = Object.keys(connectorKinds);
  for (const [name, spec] of Object.entries(raw)) {
    const at = ['connectors', name];
    if (!namePattern.test(name))
      problems.add(at, `connector name "${name}" must be lowercase letters, digits, "-" or "_"`);
    const entry = kindEntry(connectorKinds, spec.kind);
    // Listed even when it is bad, so stage inputs naming it are not reported as unknown too.
    out[name] = { name, kind: spec.kind as ConnectorKind, options: {} };
    if (!entry) {
      problems.add([...at, 'kind'], refusal(spec.kind, built));
      continue;
    }
    const options = spec.options ?? {};
    if (check(entry.optionsSchema, options, [...at, 'options'], problems))
      out[name] = { name, kind: spec.kind as ConnectorKind, options: entry.resolveOptions(options) };
  }
  return out;
}

/** Why a connector kind cannot carry a stage graph's edges, and what to use instead. */
function refusal(kind: string, built: readonly string[]): string {
  const use = `use kind: ${built.join(' or ')}`;
  if (kindEntry(allConnectorKinds, kind))
    return `${kind} cannot link stage processes: it passes frames within one process (tests); ${use}`;
  return `unknown connector kind "${kind}"${suggest(kind, built)} (built: ${built.join(', ')})`;
}
