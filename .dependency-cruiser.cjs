// The layers of this repository, checked by core/layers.test.ts (npm test) with dependency-cruiser:
//
//   sdk       plugins/sdk: the plugin SDK, a package of its own that imports nothing here; any layer may use it
//   api       core/api: the object types generated from schemas/ (npm run gen:api) and the few shared shapes and
//             constants of the domain; it imports only the SDK's object shapes, and any layer may use it
//      ^
//   runtime   core/{kube,queue,controller,leader,metrics,pki,toolchain}, core/log.ts, core/paths.ts
//      ^      generic Kubernetes and process machinery; knows nothing of tenants
//   domain    core/{names,tenancy,plugins,sessions,superclusters,provisioners,scheduler,syncer,lifecycle,vnagent},
//      ^      gitops/, plugins/: tenants, plugins, syncing, VirtualCluster lifecycle, GitOps
//   programs  core/programs: the manager, the vn-agent process, the vc CLI, the installer
//      ^
//   dev       core/dev: the developer environment, which production never runs: core/dev/local (etcd, control planes,
//             kwok and real nodes as processes on this machine, the CRI client, host locks), core/dev/provisioner
//             (the local provisioner, offered to the manager by the program that runs it) and core/dev/embedded
//             (the embedded default of `vc up`). It may import every layer but the CLI; nothing outside it imports it
//             but `vc up` (core/programs/cli/up.ts) and the tests. Inside it: local <- provisioner <- embedded.
//
// core/toolchain is runtime because production uses part of it: the pinned versions and image names the native
// provisioner and tenant DNS default to (pinnedVersions in toolchain.ts, NODE_IMAGES in node.ts), and the image
// build and push of `vc image` and `vc install` (images.ts, appimage.ts, push.ts, ociref.ts). The rest is the
// developer environment's: building the Kubernetes and node toolchains from source (ensureToolchain,
// ensureNodeToolchain, setup.ts), the local registry (registry.ts) and kube-router (netpol.ts); only core/dev, the CLI
// (`vc toolchain`, `vc up`) and the tests import setup.ts, registry.ts and netpol.ts.
//
// A layer imports only itself and the layers below it. Besides: core/ outside the programs imports neither gitops/
// nor the built-in plugins; a built-in plugin imports only the plugin SDK by its package name (and node: built-ins),
// never core/ nor another plugin; the plugin SDK (plugins/sdk) imports nothing outside itself; schemas/ imports
// nothing from the code. Tests (*.test.ts, test/) may import anything they exercise.
//
// Inside the domain, the core/ folders have a direction too (DOMAIN_ORDER below, lowest first). A folder imports its
// own files and folders of lower tiers only, never one of its own tier or above, so no two domain folders import
// each other, directly or around a ring:
//
//   1  core/names                                   names and provenance of tenant objects in the super cluster
//   2  core/tenancy                                 the Tenant, TenantPolicy evaluation, the control-plane flag allow-list
//   3  core/plugins                                 the plugin host
//   4  core/superclusters, core/sessions,           super cluster registration (its one home); per-tenant
//      core/provisioners, core/backup               connections and informers; the provisioner interface, DNS view;
//                                                   etcd snapshots, their stores and retention
//   5  core/scheduler, core/provisioners/native,    namespace and Pod placement; the production provisioners
//      core/provisioners/import
//   6  core/syncer, core/lifecycle                  the syncer (which follows the scheduler's signed placements); the
//                                                   VirtualCluster controller
//   7  core/vnagent                                 the kubelet proxy
//
// A new core/ folder gets a place in a layer (and, in the domain, a tier) before its files may import anything.

const RUNTIME = '^core/(kube|queue|controller|leader|metrics|pki|toolchain)/|^core/(log|paths)\\.ts$';
const DOMAIN =
  '^core/(names|tenancy|plugins|sessions|syncer|lifecycle|provisioners|vnagent|scheduler|superclusters|backup)/|^gitops/|^plugins/';
const API = '^core/api/';
const PROGRAMS = '^core/programs/';
const DEV = '^core/dev/';
/** UP is the one production file that imports the developer environment: the `vc up` command. */
const UP = '^core/programs/cli/up\\.ts$';
/** DEV_TOOLCHAIN are the parts of core/toolchain that only the developer environment, the CLI and tests use. */
const DEV_TOOLCHAIN = '^core/toolchain/(setup|registry|netpol)\\.ts$';
const TESTS = '\\.test\\.ts$|^test/';
const SDK = '^plugins/sdk/';

/** DOMAIN_ORDER are the tiers of the domain's core/ folders, lowest first (see the comment at the top). */
const DOMAIN_ORDER = [
  ['core/names'],
  ['core/tenancy'],
  ['core/plugins'],
  ['core/superclusters', 'core/sessions', 'core/provisioners', 'core/backup'],
  ['core/scheduler', 'core/provisioners/native', 'core/provisioners/import'],
  ['core/syncer', 'core/lifecycle'],
  ['core/vnagent'],
];

/** DEV_ORDER are the tiers of the developer environment's folders, lowest first (see the comment at the top). */
const DEV_ORDER = [['core/dev/local'], ['core/dev/provisioner'], ['core/dev/embedded']];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** filesIn matches the files directly in one of the folders, not in their subfolders. */
const filesIn = (folders) => `^(${folders.map(escape).join('|')})/[^/]+$`;

// One rule per domain (or dev) folder: it may not import a folder of its own tier (but itself) or of a tier above.
const orderRules = (kind, order) =>
  order.flatMap((tier, i) =>
    tier.map((folder) => ({
      name: `${kind}-order: ${folder}`,
      comment: `${folder} (tier ${i + 1}) imports only its own files and ${kind} folders of lower tiers.`,
      severity: 'error',
      from: { path: filesIn([folder]), pathNot: TESTS },
      to: {
        path: filesIn(
          order
            .slice(i)
            .flat()
            .filter((f) => f !== folder),
        ),
      },
    })),
  );

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...orderRules('domain', DOMAIN_ORDER),
    ...orderRules('dev', DEV_ORDER),
    {
      name: 'production-imports-dev',
      comment:
        'core/dev is the developer environment (local processes, real nodes, the local provisioner, vc up): the ' +
        'manager, the vn-agent, the domain and the runtime never import it; only `vc up` and the tests do.',
      severity: 'error',
      from: { pathNot: `${DEV}|${UP}|${TESTS}` },
      to: { path: DEV },
    },
    {
      name: 'dev-imports-cli',
      comment: 'The CLI starts the developer environment (vc up), so core/dev does not import the CLI back.',
      severity: 'error',
      from: { path: DEV, pathNot: TESTS },
      to: { path: '^core/programs/cli/' },
    },
    {
      name: 'production-imports-dev-toolchain',
      comment:
        "Building toolchains, the local registry and kube-router are the developer environment's parts of " +
        'core/toolchain: only core/dev, the CLI (vc toolchain, vc up), core/toolchain itself and the tests import them.',
      severity: 'error',
      from: { pathNot: `${DEV}|^core/programs/cli/|^core/toolchain/|${TESTS}` },
      to: { path: DEV_TOOLCHAIN },
    },
    {
      name: 'production-imports-testing',
      comment:
        'testing.ts files (and *.testing.ts beside them) hold test fixtures and test kits (static directories, host ' +
        'snapshots, the SDK conformance kit): only tests, test helpers and other testing files import them.',
      severity: 'error',
      from: { pathNot: `${TESTS}|(^|/|\\.)testing\\.ts$` },
      to: { path: '(^|/|\\.)testing\\.ts$' },
    },
    {
      name: 'api-imports-beyond-sdk',
      comment: 'core/api is the leaf every layer may import: it imports its own files and the SDK object shapes only.',
      severity: 'error',
      from: { path: API, pathNot: TESTS },
      to: { path: '^(core|gitops|plugins|schemas|test)/', pathNot: `${API}|^plugins/sdk/src/kube\\.ts$` },
    },
    {
      name: 'core-folder-outside-layers',
      comment: 'Every core/ file belongs to a layer (and a domain folder to a tier of DOMAIN_ORDER) before it imports.',
      severity: 'error',
      from: { path: '^core/', pathNot: `${RUNTIME}|${DOMAIN}|${API}|${PROGRAMS}|${DEV}|${TESTS}` },
      to: {},
    },
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
      comment:
        'Only the programs (and core/dev) wire gitops/ and the built-in plugins (plugins/registry.ts) into core.',
      severity: 'error',
      from: { path: '^core/', pathNot: `${PROGRAMS}|${DEV}|${TESTS}` },
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
