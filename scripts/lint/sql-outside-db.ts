// `npm run lint:sql`: only src/db/ holds SQL. A statement written anywhere else escapes the
// repositories, where every write is lock-ordered and reviewed with its schema. Scans the string and
// template literals of src/ outside src/db/ for SQL statements (comments are not literals, so a
// comment may still name a statement) and prints file:line for each.
//
// Statements are matched by their upper-case keywords in SQL's order (SELECT … FROM, INSERT INTO,
// UPDATE <table> SET, DELETE FROM, WITH <name> AS (, SET LOCAL, SET TRANSACTION, CREATE/ALTER/DROP
// TABLE …; a literal that starts with SELECT, BEGIN, COMMIT, ROLLBACK, or SET/RESET/SHOW <setting>),
// as this code base writes them, so English prose ("select a bank from the list", "Begin with …")
// is not mistaken for SQL.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * TEMPORARY: files another change is moving the SQL out of, as it lands. Empty it when it has;
 * nothing is ever added here.
 */

const SQL_STATEMENTS: readonly RegExp[] = [
  /\bSELECT\b[\s\S]*\bFROM\b/,
  /^\s*SELECT\s/,
  /\bINSERT\s+INTO\b/,
  /\bUPDATE\s+[\w."]+\s+(AS\s+\w+\s+)?SET\b/,
  /\bDELETE\s+FROM\b/,
  /\bWITH\s+(RECURSIVE\s+)?[\w"]+(\s*\([^)]*\))?\s+AS\s+(NOT\s+)?(MATERIALIZED\s+)?\(/,
  /^\s*(BEGIN|COMMIT|ROLLBACK)\b/,
  /^\s*(SET|RESET|SHOW)\s+(TIME\s+ZONE\b|[a-z_][\w.]*)/,
  /\bSET\s+(LOCAL|TRANSACTION)\b/,
  /\b(CREATE|ALTER|DROP)\s+(UNIQUE\s+)?(TABLE|INDEX|VIEW|SEQUENCE|TYPE|FUNCTION|TRIGGER|SCHEMA|EXTENSION)\b/,
];

export interface SqlOutsideDb {
  file: string;
  line: number;
  text: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

/** The text of a string or template literal (a template's placeholders as `$`), else undefined. */
function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node))
    return node.head.text + node.templateSpans.map((span) => `$${span.literal.text}`).join('');
  return undefined;
}

export function looksLikeSql(text: string): boolean {
  return SQL_STATEMENTS.some((statement) => statement.test(text));
}

/** Every literal holding SQL in the .ts files under `root`, except under `root`/db/ and the not-yet-moved files. */
export function sqlOutsideDb(root: string): SqlOutsideDb[] {
  const dbDir = path.join(root, 'db') + path.sep;
  const found: SqlOutsideDb[] = [];
  for (const file of sourceFiles(root)) {
    const relative = path.relative(process.cwd(), file);
    if (file.startsWith(dbDir)) continue;
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      const text = literalText(node);
      if (text !== undefined && looksLikeSql(text)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        found.push({ file: relative, line, text: text.replace(/\s+/g, ' ').trim().slice(0, 80) });
        return;
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const found = sqlOutsideDb(process.argv[2] ?? 'src');
  for (const f of found) process.stdout.write(`${f.file}:${f.line}  ${f.text}\n`);
  if (found.length > 0) {
    process.stderr.write(
      `${found.length} SQL statement(s) outside src/db/: move them into a repository function under src/db/\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`no SQL outside src/db/\n`);
}
