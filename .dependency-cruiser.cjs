/**
 * Import rules, checked by `npm run lint`: no cycles between files (type-only imports count), and the
 * folders of src/ import one way only, down the flow of a notification (ARCHITECTURE.md, "Layers": the same
 * table, which test/docs/layers.test.ts checks against LAYERS).
 */

/** From the entry points down; a module may import its own layer and the layers below it, never above. */
const LAYERS = [
  ['entry points', '^src/(main\\.ts|cli/)'],
  ['operator tooling', '^src/(seeding|simulation)/'],
  ['composition root', '^src/service(Parts)?\\.ts'],
  ['configuration', '^src/config/'],
  ['HTTP ports', '^src/(intake|admin|console)/'],
  ['order story', '^src/orderStory/'],
  ['failover recovery', '^src/failover/'],
  ['reconciliation', '^src/reconciliation/'],
  ['recording', '^src/recording/'],
  ['outbox', '^src/outbox/'],
  ['day partitions', '^src/partitions/'],
  ['audit trail', '^src/audit/'],
  ['single-active jobs', '^src/jobs/'],
  ['database', '^src/database/'],
  ['embedded Postgres', '^src/embeddedPostgres/'],
  ['payment API client', '^src/paymentApi/'],
  ['HTTP helpers', '^src/(http/|errors\\.ts)'],
  ['leaf modules', '^src/(domain|verification|parsing|observability|simulator)/'],
];

const layerRules = LAYERS.slice(1).map(([name, path], index) => ({
  name: `no-import-up-from-${name.replace(/\W+/g, '-')}`,
  comment: `${name} must not import what sits above it: ${LAYERS.slice(0, index + 1)
    .map(([above]) => above)
    .join(', ')}`,
  severity: 'error',
  from: { path },
  to: { path: LAYERS.slice(0, index + 1).map(([, above]) => above) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Import cycles, type-only imports included, make modules impossible to read or test alone.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'examples-stand-alone',
      comment: 'An example is copied out by a team: it imports nothing of the service or its tests.',
      severity: 'error',
      from: { path: '^examples/' },
      to: { path: '^(src|test)/' },
    },
    {
      name: 'src-not-from-test',
      comment: 'The service never imports test code.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^test/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
