// The guides in docs/ and the README describe the code: these checks fail when a link or an anchor
// breaks, or when a route, a sandbox trigger, a failure reason, a CLI command or a setting they name
// no longer exists (or a new one is left out of its guide).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMMAND_NAMES } from '../../src/cli/commands/index.ts';
import { CONFIG_DOC } from '../../src/config.ts';
import { FAILURE_MESSAGES } from '../../src/domain/payment-messages.ts';
import { RAIL_FAILURE_REASONS } from '../../src/domain/failure-reasons.ts';
import { SANDBOX_TRIGGERS } from '../../src/rails/sandbox-rail.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const GUIDES = readdirSync(path.join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const DOCUMENTS = ['README.md', ...GUIDES];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Markdown links outside code: [text](target). */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('the guides', () => {
  it('every relative link points at a file of the repository, and every #anchor at a heading of it', () => {
    for (const document of DOCUMENTS) {
      for (const link of linksOf(read(document))) {
        if (/^[a-z]+:/.test(link)) continue;
        const [file, anchor] = link.split('#') as [string, string | undefined];
        const target =
          file === '' ? document : path.posix.normalize(path.posix.join(path.posix.dirname(document), file));
        assert.ok(statSync(path.join(ROOT, target), { throwIfNoEntry: false }), `${document}: ${link} (no ${target})`);
        if (anchor)
          assert.ok(anchorsOf(read(target)).has(anchor), `${document}: ${link} (no heading #${anchor} in ${target})`);
      }
    }
  });

  it('docs/README.md lists every guide, and the README links every guide', () => {
    const index = read('docs/README.md');
    const readme = read('README.md');
    for (const guide of GUIDES) {
      if (guide === 'docs/README.md') continue;
      assert.ok(index.includes(`](${path.basename(guide)})`), `docs/README.md lists ${guide}`);
      assert.ok(readme.includes(`](${guide})`), `README.md links ${guide}`);
    }
  });

  it('docs/admin.md describes every admin route, and names no route that does not exist', () => {
    const openapi = JSON.parse(read('openapi.json')) as { paths: Record<string, Record<string, { tags?: string[] }>> };
    const routes = Object.entries(openapi.paths).flatMap(([route, operations]) =>
      Object.entries(operations)
        .filter(([, op]) => op.tags?.includes('Admin'))
        .map(([method]) => `${method.toUpperCase()} ${route}`),
    );
    assert.ok(routes.length >= 19);
    const admin = read('docs/admin.md');
    for (const route of routes) assert.ok(admin.includes(`\`${route}\``), `docs/admin.md names \`${route}\``);
    for (const [, named] of admin.matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) \/v1\/admin\/[^`?]*)`/g)) {
      assert.ok(routes.includes(named!), `docs/admin.md names ${named}, which is not a route`);
    }
  });

  it('docs/admin.md describes every CLI command', () => {
    const admin = read('docs/admin.md');
    for (const name of COMMAND_NAMES)
      assert.ok(admin.includes(`bolivar ${name}`), `docs/admin.md describes \`bolivar ${name}\``);
  });

  it('docs/sandbox.md lists every test national id and every failure reason', () => {
    const sandbox = read('docs/sandbox.md');
    for (const id of Object.keys(SANDBOX_TRIGGERS)) assert.ok(sandbox.includes(`\`${id}\``), id);
    for (const reason of [...Object.keys(FAILURE_MESSAGES), ...RAIL_FAILURE_REASONS])
      assert.ok(sandbox.includes(`\`${reason}\``), reason);
  });

  it('every setting the guides name is one the service reads', () => {
    const settings = new Set([...CONFIG_DOC.map(([name]) => name), 'BOLIVAR_URL']);
    for (const guide of GUIDES) {
      for (const [, name] of read(guide).matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`/g)) {
        assert.ok(settings.has(name!), `${guide} names ${name}, which the service does not read`);
      }
    }
  });

  it('the repository stands alone: nothing cites documents that are not in it', () => {
    const files = (dir: string): string[] =>
      readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory()
          ? files(path.join(dir, entry.name))
          : /\.(md|ts|mjs|json|sql)$/.test(entry.name)
            ? [path.join(dir, entry.name)]
            : [],
      );
    const own = path.relative(ROOT, fileURLToPath(import.meta.url));
    for (const file of [
      ...DOCUMENTS,
      'openapi.json',
      ...files('src'),
      ...files('test'),
      ...files('bin'),
      ...files('scripts'),
    ]) {
      if (file === own) continue;
      assert.doesNotMatch(read(file), /\b(interface|decisions)\.md\b/, file);
    }
  });
});
