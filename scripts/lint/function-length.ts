// `npm run lint:functions`: no function in src/, sdk/src/ or console/ (the operator console's .ts and
// .tsx, its components included) longer than a screen (70 lines, nested functions counted in their
// parent). A longer one must say why on the line above it, in a comment starting `// long function:`
// (meant for declarative tables, such as a list of routes).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export const MAX_FUNCTION_LINES = 70;
const JUSTIFICATION = /\/\/ long function: \S/;

export interface LongFunction {
  file: string;
  name: string;
  line: number;
  lines: number;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [full] : [];
  });
}

function nameOf(node: ts.Node, source: ts.SourceFile): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(source);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(source);
  if (parent && ts.isCallExpression(parent)) return `callback of ${parent.expression.getText(source).slice(0, 40)}`;
  return '(anonymous)';
}

/** The line comments just above a function's statement (or the declaration holding it). */
function leadingComments(node: ts.Node, source: ts.SourceFile): string {
  let anchor: ts.Node = node;
  while (
    anchor.parent &&
    !ts.isSourceFile(anchor.parent) &&
    !ts.isBlock(anchor.parent) &&
    !ts.isClassDeclaration(anchor.parent) &&
    !ts.isObjectLiteralExpression(anchor.parent)
  ) {
    anchor = anchor.parent;
  }
  const ranges = ts.getLeadingCommentRanges(source.text, anchor.getFullStart()) ?? [];
  return ranges.map((r) => source.text.slice(r.pos, r.end)).join('\n');
}

export function longFunctions(root: string, max = MAX_FUNCTION_LINES): LongFunction[] {
  const found: LongFunction[] = [];
  for (const file of sourceFiles(root)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node, insideLong: boolean): void => {
      let long = insideLong;
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        // A long function is reported once, at its outermost level.
        if (lines > max && !insideLong) {
          long = true;
          if (!JUSTIFICATION.test(leadingComments(node, source))) {
            found.push({
              file: path.relative(process.cwd(), file),
              name: nameOf(node, source),
              line: start + 1,
              lines,
            });
          }
        }
      }
      ts.forEachChild(node, (child) => visit(child, long));
    };
    visit(source, false);
  }
  return found;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const found = ['src', 'sdk/src', 'console'].flatMap((root) => longFunctions(root));
  for (const f of found) process.stdout.write(`${f.file}:${f.line}  ${f.name}: ${f.lines} lines\n`);
  if (found.length > 0) {
    process.stderr.write(
      `${found.length} function(s) over ${MAX_FUNCTION_LINES} lines without a "// long function:" reason\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`no function over ${MAX_FUNCTION_LINES} lines\n`);
}
