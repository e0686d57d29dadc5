// Generates a TypeScript client's types from the OpenAPI document the server publishes and
// proves them on a walk-through (docs/api.md#generating-a-client):
//   1. builds dist/ and dumps GET /api/v1/openapi.json to a temporary directory;
//   2. runs openapi-typescript on it (fetched by npx into its cache, never into package.json;
//      `--default-non-nullable false` so that a request property with a default, such as a
//      source's `type`, stays optional; `--root-types` exports each component as a named type);
//   3. type-checks the generated api.ts with scripts/client/walkthrough.ts using the project's
//      tsc (strict), including the mistakes the types must reject (`@ts-expect-error`);
//   4. runs the compiled walk-through against a server started from dist/ on port 0.
// Usage: node scripts/client-typecheck.mjs [--keep]   (--keep leaves the temporary directory)
// Exit status 1 when a step fails. Needs the network on the first run (npx).
// Optional tooling, outside `npm test`: a cross-check with a third-party generator. The
// project's own, dependency-free generator is scripts/generate-client.mjs, which
// test/client-generated.test.ts covers without the network.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const dir = mkdtempSync(join(tmpdir(), 'sw-client-'));
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', ...opts });
const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');

try {
  run(process.execPath, [tsc, '-p', 'tsconfig.build.json']);
  const doc = join(dir, 'openapi.json');
  run(process.execPath, ['scripts/dump-openapi.mjs', doc]);
  const schemas = Object.keys(JSON.parse(readFileSync(doc, 'utf8')).components.schemas);
  console.log(`openapi.json: ${schemas.length} component schemas`);

  const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx';
  const gen = run(npx, ['--yes', 'openapi-typescript@7', doc, '-o', join(dir, 'api.ts'), '--default-non-nullable', 'false', '--root-types', '--root-types-no-schema-prefix'], { cwd: dir });
  console.log(gen.trim().split('\n').filter((l) => /openapi-typescript|→/.test(l)).join('\n'));
  const api = readFileSync(join(dir, 'api.ts'), 'utf8');
  const named = schemas.filter((n) => new RegExp(`^export type ${n} = components\\['schemas'\\]\\['${n}'\\];$`, 'm').test(api));
  console.log(`api.ts: ${api.split('\n').length} lines; ${named.length}/${schemas.length} schemas exported as named types (${['Conversation', 'Issue', 'IngestionResult', 'ErrorResponse'].filter((n) => named.includes(n)).join(', ')}, …)`);
  if (named.length !== schemas.length) throw new Error(`not exported as named types: ${schemas.filter((n) => !named.includes(n)).join(', ')}`);

  copyFileSync(join(repo, 'scripts', 'client', 'walkthrough.ts'), join(dir, 'walkthrough.ts'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', lib: ['ES2023'], module: 'NodeNext', moduleResolution: 'NodeNext', strict: true,
      types: ['node'], typeRoots: [join(repo, 'node_modules', '@types')], outDir: 'out', rootDir: '.',
    },
    files: ['api.ts', 'walkthrough.ts'],
  }, null, 2));
  run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir, stdio: 'inherit' });
  console.log(`tsc (strict): api.ts and walkthrough.ts type-check, with ${(readFileSync(join(dir, 'walkthrough.ts'), 'utf8').match(/^\s*\/\/ @ts-expect-error/gm) ?? []).length} mistakes rejected`);

  const { startServer } = await import(join(repo, 'dist', 'serve.js'));
  const { loadConfig } = await import(join(repo, 'dist', 'config.js'));
  const { systemClock } = await import(join(repo, 'dist', 'clock.js'));
  const { silentLogger } = await import(join(repo, 'dist', 'logger.js'));
  const dataDir = join(dir, 'data');
  let announced = '';
  const server = await startServer(loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, SYNC: 'none' }), {
    clock: systemClock, logger: silentLogger, announce: (t) => { announced += t; },
  });
  try {
    const key = /svck_[0-9A-Za-z]+/.exec(announced)?.[0];
    if (!key) throw new Error('the server announced no API key');
    // Asynchronously: the server answers from this process's event loop.
    const { stdout: out } = await promisify(execFile)(process.execPath, [join(dir, 'out', 'walkthrough.js')], { cwd: dir, env: { ...process.env, BASE_URL: server.url, API_KEY: key } });
    console.log(`walk-through against ${server.url}:\n  ${out.trim().split('\n').join('\n  ')}`);
  } finally {
    await server.close();
  }
} catch (e) {
  console.error(`client-typecheck: ${e.message ?? e}`);
  process.exitCode = 1;
} finally {
  if (keep) console.log(`kept ${dir}`); else rmSync(dir, { recursive: true, force: true });
}
