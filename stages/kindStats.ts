/**
 * Main reads a kind's stats section (StageStats.kind) through its kind's accessor, made here: each kind declares
 * the section's type in its protocol.ts; consumers (metrics, the router, tests) never spell the wire layout.
 */

/** A kind's stats section when it is keyed by the kind's name (`{code2wav: {...}}`). */
export type KindSection<K extends string, T> = { readonly [key in K]?: T };

/** Anything that carries a stats report's kind section: a StageStats, or the diagnostics event built on one. */
export interface WithKindStats {
  readonly kind?: unknown;
}

/**
 * An accessor for one kind's section, typed as that kind's: every part optional, since a report of another kind
 * (or of an instance without that part) lacks it.
 */
export function kindSectionOf<T extends object>(): (stats: WithKindStats | null | undefined) => Partial<T> {
  return (stats) => {
    const section = stats?.kind;
    return typeof section === 'object' && section !== null ? (section as Partial<T>) : {};
  };
}
