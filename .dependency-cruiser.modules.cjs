/**
 * The module-folder rule of docs/architecture.md, checked by `npm run lint:deps` and `npm test` beside
 * .dependency-cruiser.cjs: no module folder under src/modules/ imports another that imports it back
 * (directly or around a longer loop of module folders).
 *
 * It lives in a config of its own because dependency-cruiser's folder rules see every folder, src/ and
 * temporal/ included, and cannot be told to follow module folders alone; this config cruises src/modules only.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-module-folder-loops',
      severity: 'error',
      comment:
        'Two module folders that import each other cannot be read or changed alone: move the shared piece down (to the owner of ' +
        'the table or type), or have the composition (src/services.ts, temporal/) hand one side a function.',
      scope: 'folder',
      // A provider folder (channels/providers/<type>/) counts as part of its module folder: `to` has no $.
      from: { path: '^src/modules/[^/]+$' },
      to: { path: '^src/modules/[^/]+', circular: true },
    },
  ],
  options: {
    includeOnly: '^src/modules/',
    doNotFollow: { path: 'node_modules' },
    preserveSymlinks: true,
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
