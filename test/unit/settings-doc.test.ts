// docs/settings.md lists every setting: its table is generated from CONFIG_DOC (src/config.ts, what
// `bolivar config` prints) by `npm run docs:settings` (scripts/settings-doc.ts). These checks fail
// when the committed table is not what the generator writes, so a setting added, removed or
// re-described in CONFIG_DOC without running it is caught.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SETTINGS_DOC, withSettingsTable } from '../../scripts/settings-doc.ts';
import { CONFIG_DOC } from '../../src/config.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const doc = readFileSync(path.join(ROOT, SETTINGS_DOC), 'utf8');

describe('docs/settings.md', () => {
  it('holds the table the generator writes from CONFIG_DOC (run `npm run docs:settings` after changing a setting)', () => {
    assert.equal(doc, withSettingsTable(doc));
  });

  it('has one row per setting, in the order of CONFIG_DOC, each with its default', () => {
    const rows = [...doc.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+) \|/gm)].map((m) => [
      m[1],
      m[2]!.trim().replace(/^`|`$/g, ''),
    ]);
    assert.deepEqual(
      rows,
      CONFIG_DOC.map(([name, fallback]) => [name, fallback]),
    );
  });

  it('notices a table that is not the generated one', () => {
    const edited = doc.replace('| `PORT` |', '| `PORT` | 8080 |');
    assert.notEqual(edited, doc);
    assert.notEqual(withSettingsTable(edited), edited);
  });
});
