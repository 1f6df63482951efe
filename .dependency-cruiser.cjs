// The import rules of src/, checked by `npm run deps` (a CI stage right after the type check).
//
// 1. No import cycle, type-only imports included: a cycle of types still ties the files
//    together (one cannot be read, moved or tested without the others).
//
// 2. Layers, from the top; a module imports from its own layer or from a lower one, never
//    from a higher one:
//
//    entry     src/main.ts, src/shutdown.ts, src/cli/, src/source-digest.ts, src/log-destination.ts
//              the process: listening, signals, the `vrp` command, the check of its build,
//              where its log lines go
//    http      src/http/         Fastify app, plugins, routes, console (no SQL here)
//    jobs      src/jobs/         queue operations, worker, tasks, scheduler, pruner, reconciler;
//                                background.ts wires them for a process
//    context   src/context.ts    what the app and the background share (built once)
//    metrics   src/metrics.ts    Prometheus metrics; implements the small recording
//                                interfaces that jobs/ and webhooks/ declare
//              src/request-histogram.ts  the request latency histogram's bound series
//    services  src/auth/         OAuth, tokens, secrets
//              src/webhooks/     the webhook sender
//              src/drivers/      hypervisor interface and drivers
//              (three siblings: none of them imports another)
//    store     src/store/        Kysely, migrations, repositories, the operations that write rows
//    base      src/domain/       pure rules and the types the layers share (no I/O)
//              src/loop/         the wake signal and poll-loop lifecycle of the worker and
//                                the webhook sender
//              src/config.ts, src/random-pool.ts, src/expected-failure.ts (start-up errors
//                                printed as one line), src/data-dir.ts
//
//    So auth/, store/ and webhooks/ never import context, jobs or metrics: what they need of
//    those is a type they declare (or domain/ declares) and the higher layer passes in.
//
// 3. Inside http/: payload schemas that the reseller API, the operator API and the console
//    share live in src/http/schemas/; the route groups both APIs serve, each through its
//    door, live in src/http/actions/. A route file (http/routes/, http/operator/) or an
//    action file never imports a route file, and the console imports neither routes nor
//    actions (it is a client of the operator API: it needs the payloads' types only).
//
// A violation makes `npm run deps` exit non-zero; test/scripts/deps.test.ts shows it does.

/** Paths of each layer, top first. */
const LAYERS = [
  {
    name: 'entry',
    paths: [
      '^src/main\\.ts$',
      '^src/shutdown\\.ts$',
      '^src/cli/',
      '^src/source-digest\\.ts$',
      '^src/log-destination\\.ts$',
    ],
  },
  { name: 'http', paths: ['^src/http/'] },
  { name: 'jobs', paths: ['^src/jobs/'] },
  { name: 'context', paths: ['^src/context\\.ts$'] },
  { name: 'metrics', paths: ['^src/metrics\\.ts$', '^src/request-histogram\\.ts$'] },
  { name: 'services', paths: ['^src/auth/', '^src/webhooks/', '^src/drivers/'] },
  { name: 'store', paths: ['^src/store/'] },
  {
    name: 'base',
    paths: [
      '^src/domain/',
      '^src/loop/',
      '^src/config\\.ts$',
      '^src/random-pool\\.ts$',
      '^src/expected-failure\\.ts$',
      '^src/data-dir\\.ts$',
    ],
  },
];

const layerRules = LAYERS.slice(1).map((layer, i) => ({
  name: `layer-${layer.name}-imports-upward`,
  comment: `${layer.name} imports from a higher layer (${LAYERS.slice(0, i + 1)
    .map((l) => l.name)
    .join(', ')}); see the layers at the top of .dependency-cruiser.cjs`,
  severity: 'error',
  from: { path: layer.paths },
  to: { path: LAYERS.slice(0, i + 1).flatMap((l) => l.paths) },
}));

const SIBLINGS = ['auth', 'webhooks', 'drivers'];
const siblingRules = SIBLINGS.map((name) => ({
  name: `${name}-imports-a-sibling`,
  comment: `src/${name}/ imports another of auth/, webhooks/, drivers/: move the shared part down (domain/, store/)`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: SIBLINGS.filter((s) => s !== name).map((s) => `^src/${s}/`) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'an import cycle (type-only imports count): move the shared part into a file of its own',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'every-module-in-a-layer',
      comment: 'a new top-level module of src/: add it to a layer in .dependency-cruiser.cjs',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.flatMap((l) => l.paths) },
      to: {},
    },
    ...layerRules,
    ...siblingRules,
    {
      name: 'route-imports-a-route-file',
      comment:
        'a route file imports another route file: shared payload schemas go to src/http/schemas/, route groups both APIs serve to src/http/actions/',
      severity: 'error',
      from: {
        path: ['^src/http/routes/', '^src/http/operator/', '^src/http/actions/', '^src/http/console/'],
      },
      to: {
        path: ['^src/http/routes/', '^src/http/operator/'],
        // A folder's own helpers (operator-route.ts, paging.ts) are not routes.
        pathNot: ['^src/http/operator/(operator-route|paging)\\.ts$'],
      },
    },
    {
      name: 'console-imports-actions',
      comment:
        'the console imports a route group: it reads the operator API, so it needs only src/http/schemas/',
      severity: 'error',
      from: { path: '^src/http/console/' },
      to: { path: '^src/http/actions/' },
    },
  ],
  options: {
    // Type-only imports are dependencies too (they would be dropped from the graph otherwise).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
  },
};
