// Writes the table of every setting in docs/settings.md from CONFIG_DOC (src/config.ts: the
// `[name, default, meaning]` rows `bolivar config` prints), between the two marker comments; the
// prose around them is left as it is. `--check` fails when the table in the file is not what this
// writes (drift): change a setting in CONFIG_DOC, then run `npm run docs:settings`.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_DOC } from '../src/config.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SETTINGS_DOC = 'docs/settings.md';
const BEGIN =
  '<!-- settings table: written by `npm run docs:settings` from CONFIG_DOC in src/config.ts; edit it there, not here -->';
const END = '<!-- end of the settings table -->';

const NAMES = CONFIG_DOC.map(([name]) => name).sort((a, b) => b.length - a.length);
const SETTING = new RegExp(`(?<![\\w$\`])(?:${NAMES.join('|')})(?:=[^\\s,;:)]+)?(?![\\w])`, 'g');
const GUIDE = /\bdocs\/([\w-]+\.md)(#[\w-]+)?/g;

/** A meaning as markdown: setting names as code, guides as links, table syntax escaped; code spans kept. */
function meaningCell(meaning: string): string {
  return meaning
    .split(/(`[^`]*`)/)
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part
            .replace(/[|*]/g, '\\$&')
            .replace(SETTING, '`$&`')
            .replace(GUIDE, (_, file: string, anchor = '') => `[${file}](${file}${anchor})`),
    )
    .join('');
}

function defaultCell(fallback: string): string {
  return fallback === '(unset)' ? fallback : `\`${fallback}\``;
}

/** The generated table, markers included. */
function settingsTable(): string {
  const rows = CONFIG_DOC.map(
    ([name, fallback, meaning]) => `| \`${name}\` | ${defaultCell(fallback)} | ${meaningCell(meaning)} |`,
  );
  return [BEGIN, '', '| Variable | Default | Meaning |', '|---|---|---|', ...rows, '', END].join('\n');
}

/** `markdown` with the text between its markers replaced by the generated table. */
export function withSettingsTable(markdown: string): string {
  const begin = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (begin < 0 || end < begin || markdown.indexOf(BEGIN, begin + 1) >= 0 || markdown.indexOf(END, end + 1) >= 0) {
    throw new Error(`${SETTINGS_DOC} must hold each marker once, in order:\n${BEGIN}\n${END}`);
  }
  return markdown.slice(0, begin) + settingsTable() + markdown.slice(end + END.length);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = path.join(ROOT, SETTINGS_DOC);
  const current = readFileSync(file, 'utf8');
  const generated = withSettingsTable(current);
  if (process.argv.includes('--check')) {
    if (generated !== current) {
      process.stderr.write(`${SETTINGS_DOC} is out of date: run \`npm run docs:settings\` and commit the result.\n`);
      process.exit(1);
    }
    process.stdout.write(`${SETTINGS_DOC} matches CONFIG_DOC\n`);
  } else {
    writeFileSync(file, generated);
    process.stdout.write(`wrote ${SETTINGS_DOC}\n`);
  }
}
