/**
 * The layering rules of docs/architecture.md, checked by `npm run lint:deps` and `npm test`
 * (the rule on loops between module folders is in .dependency-cruiser.modules.cjs).
 * Paths are patterns, not file lists, so moving files inside a module keeps them in force.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-import-loops',
      severity: 'error',
      comment: 'A loop of imports means no file in it can be read or changed alone: break it by moving the shared piece down a layer.',
      from: { path: '^(src|temporal)/' },
      to: { circular: true },
    },
    {
      name: 'lower-layers-do-not-import-modules',
      severity: 'error',
      comment:
        'src/db, src/http, src/storage, src/credentials, the Services bag, config, logger and errors sit below the modules: ' +
        'they receive what they need from above (the ORM built with the entity list, authenticators) instead of importing a module.',
      from: { path: '^src/(db/|http/|storage/|credentials/|(services|config|logger|errors)[.]ts$)' },
      // The composition files reach every module, so they count as modules here.
      to: { path: ['^src/modules/', '^src/(entities|app|main)[.]ts$'] },
    },
    {
      name: 'workflows-stay-in-the-sandbox',
      severity: 'error',
      comment:
        'Workflow code runs in the deterministic sandbox: it may import @temporalio/workflow, temporal/*.shared.ts, ' +
        'temporal/failure-types.ts (constants only) and other workflow files. Type-only imports (activity interfaces) are erased.',
      from: { path: '^temporal/workflows/' },
      to: {
        dependencyTypesNot: ['type-only'],
        pathNot: ['^temporal/workflows/', '^temporal/[^/]+[.]shared[.]ts$', '^temporal/failure-types[.]ts$', '(^|/)node_modules/@temporalio/workflow/'],
      },
    },
    {
      name: 'workflow-types-stay-in-temporal',
      severity: 'error',
      comment: 'The types a workflow imports (its activities\' interfaces, SDK types) come from temporal/ or the Temporal SDK, not from the service.',
      from: { path: '^temporal/workflows/' },
      to: { dependencyTypes: ['type-only'], pathNot: ['^temporal/', '(^|/)node_modules/@temporalio/'] },
    },
    {
      name: 'services-do-not-import-koa',
      severity: 'error',
      comment:
        'Only the HTTP edge of a module (its routes, its OAuth server and pages, receivers and docs) may see Koa: ' +
        'a service takes plain values and returns plain values or throws domain errors.',
      from: {
        path: '^src/modules/',
        pathNot: [
          '[.]routes[.]ts$',
          '[.]docs[.]ts$',
          '^src/modules/oauth/oauth-(server|account|interactions|grants-session)[.]ts$',
          '^src/modules/inbound/trigger-receiver[.]ts$',
        ],
      },
      to: { path: '(^|/)node_modules/(koa|koa-body|@koa/[^/]+|@types/koa)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // node_modules is a symlink in worktrees: keep its paths as node_modules/… in reports.
    preserveSymlinks: true,
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
