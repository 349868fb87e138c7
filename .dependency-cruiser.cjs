// The layers of this repository, checked by test/layers.test.ts (npm test) with dependency-cruiser:
//
//   sdk       plugins/sdk: the plugin SDK, a package of its own that imports nothing here; any layer may use it
//      ^
//   runtime   core/{kube,queue,controller,leader,metrics,pki,toolchain}, core/log.ts, core/paths.ts
//      ^      generic Kubernetes and process machinery; knows nothing of tenants
//   domain    core/{names,tenancy,plugins,syncer,lifecycle,provisioners,local,vnagent,scheduler,superclusters}, gitops/, plugins/
//      ^      tenants, plugins, syncing, VirtualCluster lifecycle, GitOps
//   programs  core/programs: the manager, the vn-agent process, the embedded default (vc up), the vc CLI
//
// A layer imports only itself and the layers below it. Besides: core/ outside the programs imports neither gitops/
// nor the built-in plugins; a built-in plugin imports only the plugin SDK by its package name (and node: built-ins),
// never core/ nor another plugin; the plugin SDK (plugins/sdk) imports nothing outside itself; schemas/ imports
// nothing from the code. Tests (*.test.ts, test/) may import anything they exercise.
//
// core/local (the local etcd, control planes and super cluster) is domain: it renders control-plane flags of the
// provisioners. core/names and core/tenancy are domain as they speak of tenants.

const RUNTIME = '^core/(kube|queue|controller|leader|metrics|pki|toolchain)/|^core/(log|paths)\\.ts$';
const DOMAIN =
  '^core/(names|tenancy|plugins|syncer|lifecycle|provisioners|local|vnagent|scheduler|superclusters)/|^gitops/|^plugins/';
const PROGRAMS = '^core/programs/';
const TESTS = '\\.test\\.ts$|^test/';
const SDK = '^plugins/sdk/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'runtime-imports-domain-or-programs',
      comment: 'The runtime layer is generic machinery: it must not know tenants, plugins, GitOps or the programs.',
      severity: 'error',
      from: { path: RUNTIME, pathNot: TESTS },
      to: { path: `${DOMAIN}|${PROGRAMS}`, pathNot: SDK },
    },
    {
      name: 'domain-imports-programs',
      comment: 'Programs compose the domain; the domain never reaches up into a composition root.',
      severity: 'error',
      from: { path: DOMAIN, pathNot: TESTS },
      to: { path: PROGRAMS },
    },
    {
      name: 'core-imports-gitops-or-builtin-plugins',
      comment: 'Only the programs wire gitops/ and the built-in plugins (plugins/registry.ts) into core.',
      severity: 'error',
      from: { path: '^core/', pathNot: `${PROGRAMS}|${TESTS}` },
      to: { path: '^gitops/|^plugins/', pathNot: SDK },
    },
    {
      name: 'builtin-plugin-imports-beyond-sdk',
      comment:
        'A built-in plugin is written like a third-party one: it imports @virtualcluster-ts/plugin-sdk (and its ' +
        'subpaths), node: built-ins and files of its own folder; nothing from core/ or gitops/ (npm packages, which ' +
        'are not cruised, are refused by plugins/imports.test.ts).',
      severity: 'error',
      from: { path: '^plugins/', pathNot: `${SDK}|^plugins/registry\\.ts$|${TESTS}` },
      to: { pathNot: '^plugins/', dependencyTypesNot: ['core'] },
    },
    {
      name: 'builtin-plugin-imports-another-plugin',
      comment:
        'Built-in plugins do not import each other: what two of them share lives in the plugin SDK (a subpath such ' +
        'as @virtualcluster-ts/plugin-sdk/pods), where a third-party plugin can use it too.',
      severity: 'error',
      from: { path: '^plugins/([^/]+)/', pathNot: `${SDK}|${TESTS}` },
      to: { path: '^plugins/', pathNot: `${SDK}|^plugins/$1/` },
    },
    {
      name: 'sdk-imports-outside-sdk',
      comment:
        'The plugin SDK is published on its own and has no dependencies: its source imports only its own files ' +
        'and node: built-ins (its tests may import vitest).',
      severity: 'error',
      from: { path: SDK, pathNot: TESTS },
      to: { pathNot: SDK, dependencyTypesNot: ['core'] },
    },
    {
      name: 'sdk-tests-import-outside-sdk',
      comment: 'The SDK is tested on its own, as a third party would build it: its tests import nothing else here.',
      severity: 'error',
      from: { path: SDK },
      to: { path: '^(core|gitops|plugins|schemas|test)/', pathNot: SDK },
    },
    {
      name: 'schemas-import-code',
      comment:
        'schemas/ (JSON Schemas, their validator and the CRD generator) depend on nothing else in the repository.',
      severity: 'error',
      from: { path: '^schemas/' },
      to: { path: '^(core|gitops|plugins|test)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that does not resolve is a broken import.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // build output (dist/, and each workspace package's dist/) is not source
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
