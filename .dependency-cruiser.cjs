// The layers of src/, as rules `npm run lint:deps` (dependency-cruiser) enforces, so that an arrow
// pointing back up cannot come back unnoticed. The floors, bottom up (config.ts, the environment
// read once, may be imported from any floor but domain/):
//
//   domain/    the payment rules as pure functions and types: imports only domain/
//   contract/  the shapes the API serves that a use case builds (TypeBox schemas, their types): domain/
//   db/        SQL and the engines: domain/
//   rails/     the rail adapters: db/, domain/
//   webhooks/  delivery transport: domain/
//   services/  the use cases: db/, rails/, webhooks/, contract/, domain/
//   workers/   the background loops: services/ and below, never http/
//   http/      the API: services/ and below
//   app.ts     wires them together; only main.ts imports it
//
// Type-only imports count (tsPreCompilationDeps): a type pulled from a floor above still ties the
// lower floor to its shape.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'domain-imports-only-domain',
      comment:
        'domain/ is the payment rules with no I/O: it is read and tested on its own, so it may use node builtins and ' +
        'packages but nothing of ours outside domain/ (the HTTP envelope, SQL, rails and the SDK all sit above it).',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', '^node_modules/'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'contract-imports-only-domain',
      comment:
        'contract/ holds the answers a use case returns and a route serves (its schema and its type, one definition): ' +
        'it sits below services/ so both can read it, and so it imports nothing of ours but domain/.',
      severity: 'error',
      from: { path: '^src/contract/' },
      to: { pathNot: ['^src/(contract|domain)/', '^node_modules/'], dependencyTypesNot: ['core'] },
    },
    {
      name: 'db-never-imports-above',
      comment:
        'db/ stores and reads what the layers above decide; importing http/, services/, rails/ or workers/ would tie ' +
        'a repository to a caller and make the lock-ordered writers depend on what they serve.',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/(http|services|rails|workers)/' },
    },
    {
      name: 'config-imports-nothing-of-ours',
      comment:
        'config.ts is read by every layer (db/ included): whatever it imported, every layer would reach. It parses ' +
        'the environment only; the rails file is read by rails/rails-file.ts at start.',
      severity: 'error',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'only-main-imports-app',
      comment:
        'app.ts builds the whole service (every route, every worker); anything else importing it pulls in all of it ' +
        'and makes a cycle waiting to happen. main.ts is the one place that starts it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/main\\.ts$' },
      to: { path: '^src/app\\.ts$' },
    },
    {
      name: 'services-never-import-http-or-workers',
      comment:
        'services/ are the use cases both the API and the workers call; an import of http/ (or of a worker) would make ' +
        'a use case depend on one of its callers and its transport.',
      severity: 'error',
      from: { path: '^src/services/' },
      to: { path: '^src/(http|workers)/' },
    },
    {
      name: 'rails-never-import-above',
      comment:
        'A rail adapter only translates between our payment and the provider: it must not reach into the API, the use ' +
        'cases or the loops that call it.',
      severity: 'error',
      from: { path: '^src/rails/' },
      to: { path: '^src/(http|services|workers)/' },
    },
    {
      name: 'webhooks-import-only-domain',
      comment:
        'webhooks/ is the delivery transport (HTTP client, address guard): what to send and when is decided by the ' +
        'services and workers above it, so it needs nothing of ours but domain/.',
      severity: 'error',
      from: { path: '^src/webhooks/' },
      to: { path: '^src/(http|services|workers|db|rails)/' },
    },
    {
      name: 'nothing-imports-the-gateway-simulator',
      comment:
        'src/gateway-simulator/ is a separate process standing in for a bank: the service must reach it only over HTTP, ' +
        'as it would a real gateway, so nothing else in src/ imports it (it may import the protocol and the signing it shares).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/gateway-simulator/' },
      to: { path: '^src/gateway-simulator/' },
    },
    {
      name: 'gateway-simulator-imports-only-the-protocol',
      comment: 'The simulator shares the wire protocol and the signing with the connector, nothing else of the service.',
      severity: 'error',
      from: { path: '^src/gateway-simulator/' },
      to: { path: '^src/', pathNot: ['^src/gateway-simulator/', '^src/domain/rail-signature\\.ts$', '^src/rails/http-bank/protocol\\.ts$'] },
    },
    {
      name: 'workers-never-import-http',
      comment: 'The background loops run without the API (a worker process serves no routes): nothing of http/ belongs in them.',
      severity: 'error',
      from: { path: '^src/workers/' },
      to: { path: '^src/http/' },
    },
    {
      name: 'no-circular',
      comment: 'A cycle makes module evaluation order matter and the floors meaningless; src/, console/ and sdk/ have none, keep it so.',
      severity: 'error',
      from: { path: '^(src|console|sdk)/' },
      to: { circular: true },
    },
  ],
  options: {
    // Followed beyond src/ (the SDK workspace, say) so an import of it from domain/ is still seen.
    doNotFollow: { path: '^node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
