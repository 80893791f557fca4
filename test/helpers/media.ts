/** The seeded media the benches make (bench/mediaSamples.ts): the bench imports nothing from test/. */
export * from '../../bench/mediaSamples.ts';
