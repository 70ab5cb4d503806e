// The operator console: the single-page app `npm run build` writes to dist/console, served at
// /console. Public (the page holds no data; every call it makes carries the operator's key) and
// hidden from the OpenAPI document, like /docs. Deep links (/console/payments/…) answer the page,
// which routes itself.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../../domain/errors.ts';
import type { App } from '../types.ts';

/**
 * The page runs only its own files and talks only to this service.
 * @internal Exported for its tests, not used elsewhere.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon',
  '.map': 'application/json; charset=utf-8',
};

interface ConsoleFile {
  body: Buffer;
  type: string;
  etag: string;
  /** Assets carry a content hash in their name: cached for good. The page is revalidated each time. */
  cacheControl: string;
}

/**
 * Where the built console is: beside the bundle (dist/main.js → dist/console), or, when the service
 * runs from its TypeScript sources (the tests), in the build output of the repository.
 */
function builtConsoleDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return [path.join(here, 'console'), path.resolve(here, '../../../dist/console')].find((dir) =>
    existsSync(path.join(dir, 'index.html')),
  );
}

/** Every servable file of a build, read once; none when the folder holds no build. */
function loadFiles(dir: string | undefined): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  if (dir === undefined || !existsSync(path.join(dir, 'index.html'))) return files;
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const type = TYPES[path.extname(entry.name)];
        if (type === undefined) continue;
        const body = readFileSync(full);
        const relative = path.relative(dir, full).split(path.sep).join('/');
        files.set(relative, {
          body,
          type,
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
          cacheControl: relative === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable',
        });
      }
    }
  };
  walk(dir);
  return files;
}

function securityHeaders(reply: FastifyReply): FastifyReply {
  return (
    reply
      .header('content-security-policy', CONSOLE_CSP)
      // frame-ancestors 'none' for browsers that predate it: a framed console could be clicked through.
      .header('x-frame-options', 'DENY')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cross-origin-opener-policy', 'same-origin')
  );
}

export async function consoleRoutes(app: App, dir = builtConsoleDir()): Promise<void> {
  const files = loadFiles(dir);
  consolePageRoute(app, files);
  consoleFileRoute(app, files);
}

function sendFile(files: Map<string, ConsoleFile>, reply: FastifyReply, ifNoneMatch: string | undefined, name: string) {
  const file = files.get(name);
  if (file === undefined) {
    throw new ApiError(
      'resource_not_found',
      files.size === 0
        ? 'The operator console is not built: run `npm run build`.'
        : 'No such file of the operator console.',
    );
  }
  securityHeaders(reply).header('cache-control', file.cacheControl).header('etag', file.etag);
  if (ifNoneMatch === file.etag) return reply.code(304).send();
  return reply.type(file.type).send(file.body);
}

const CONSOLE_ROUTE = { config: { public: true }, schema: { hide: true } } as const;

function consolePageRoute(app: App, files: Map<string, ConsoleFile>): void {
  app.get('/console', CONSOLE_ROUTE, async function consolePage(request, reply) {
    return sendFile(files, reply, request.headers['if-none-match'], 'index.html');
  });
}

function consoleFileRoute(app: App, files: Map<string, ConsoleFile>): void {
  app.get('/console/*', CONSOLE_ROUTE, async function consoleFile(request, reply) {
    const rest = (request.params as { '*': string })['*'];
    // A file the page asks for is served or missing; any other path is a screen of the page.
    const name = rest.startsWith('assets/') || /\.[a-z0-9]+$/i.test(rest) ? rest : 'index.html';
    return sendFile(files, reply, request.headers['if-none-match'], name);
  });
}
