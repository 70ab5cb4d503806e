// The tenant-scope check: does a statement name its tenant for every tenant-owned table it touches?
// On a Citus cluster distributed by tenant_id (docs/scaling.md), only such a statement is routed to
// one shard; a money transaction made of them runs on one node. The statements are parsed by
// PostgreSQL's own parser (libpg-query, compiled to WebAssembly), not matched with regexes: the money
// statements are CTE chains, UNION ALLs and joins against unnest(…), which no pattern reads reliably.
import { loadModule, parseSync } from 'libpg-query';

/**
 * The tables a Citus cluster would distribute by tenant_id, all colocated: every one has tenant_id
 * NOT NULL and leading its primary key or unique key. Every other table is a reference table or stays
 * on the coordinator (TABLE_PLACEMENT).
 */
export const TENANT_OWNED = new Set([
  'beneficiaries',
  'customers',
  'daily_closes',
  'idempotency_keys',
  'ledger_accounts',
  'ledger_balance_history',
  'ledger_postings',
  'ledger_transactions',
  'limit_usage',
  'outbox_events',
  'payment_transitions',
  'payments',
  'payout_batch_items',
  'payout_batches',
  'programs',
  'quotes',
  'reconciliation_discrepancies',
  'reconciliation_partitions',
  'reconciliation_runs',
  'report_outcome_times',
  'report_payment_counts',
  'report_webhook_attempts',
  'sandbox_webhook_receipts',
  'webhook_deliveries',
  'webhook_endpoints',
]);

/** Where each table that is not tenant-owned would live on Citus, and why (docs/scaling.md says more). */
export const TABLE_PLACEMENT: Record<string, 'reference' | 'coordinator'> = {
  // Small, read by every request or batch across tenants, written by operators only.
  tenants: 'reference', // api_keys joins it by the key's tenant; the lock statement reads its credit terms
  api_keys: 'reference', // found by the key's hash before the tenant is known
  limit_rules: 'reference', // platform rules have no tenant (tenant_id NULL), and a batch reads both kinds
  limit_rule_epoch: 'reference',
  fx_rates: 'reference',
  rails: 'reference',
  rail_routes: 'reference', // a route may name no tenant (tenant_id NULL)
  app_state: 'reference',
  report_fold: 'reference',
  // Keyed by something other than the tenant, or by no tenant at all: not distributed.
  schema_migrations: 'coordinator',
  sandbox_rail_transfers: 'coordinator', // the simulated bank's book, keyed by the rail's reference
  sandbox_rail_notifications: 'coordinator',
  rail_inbox: 'coordinator', // keyed by rail and the rail's event id
  rail_statements: 'coordinator', // one rail's day, across tenants
  rail_statement_mismatches: 'coordinator', // tenant_id NULL for a line that matches no payment
  rail_statement_pulls: 'coordinator', // one rail's day, no tenant
  anomalies: 'coordinator', // tenant_id NULL for rail-level anomalies; dedup_key unique across tenants
  audit_log: 'coordinator', // actor and target tenants, the target often none
  audit_archives: 'coordinator', // the audit trail's archive files, no tenant
};

/** Tables whose write makes a transaction a money transaction: balances, payments and their history. */
const MONEY_TABLES = new Set([
  'ledger_accounts',
  'ledger_transactions',
  'ledger_postings',
  'payments',
  'payment_transitions',
  'limit_usage',
  'daily_closes',
]);

export interface ScopeFinding {
  /** Tenant-owned tables this statement touches whose tenant_id is not bound to one value. */
  violations: string[];
  /** What each tenant-owned table's tenant_id is bound to: `$n` (a parameter) or a literal. */
  bindings: Array<{ table: string; value: string }>;
  /** Tables the statement writes (INSERT, UPDATE, DELETE, in any CTE). */
  writes: string[];
}

/** Loads the parser (WebAssembly) once; call before checkStatement. */
export function loadParser(): Promise<void> {
  return loadModule();
}

/** True when a transaction that ran these statements changed money (see MONEY_TABLES). */
export function isMoneyTransaction(findings: readonly ScopeFinding[]): boolean {
  return findings.some((f) => f.writes.some((table) => MONEY_TABLES.has(table)));
}

type Ast = Record<string, any>;

interface Scope {
  parent: Scope | null;
  ctes: Set<string>;
  /** Tenant-owned tables in this query level's FROM (or an UPDATE/DELETE target), by alias. */
  relations: Map<string, string>;
  /** Aliases whose tenant_id is bound to a value (or to another anchored table's tenant_id). */
  anchored: Set<string>;
}

interface Walk {
  finding: ScopeFinding;
}

/** Parses `sql` (one or more statements) and checks each tenant-owned table it touches. */
export function checkStatement(sql: string): ScopeFinding {
  const walk: Walk = { finding: { violations: [], bindings: [], writes: [] } };
  for (const { stmt } of parseSync(sql).stmts ?? []) visitStatement(walk, stmt as Ast, null);
  return walk.finding;
}

function newScope(parent: Scope | null): Scope {
  return { parent, ctes: new Set(), relations: new Map(), anchored: new Set() };
}

function cteVisible(scope: Scope | null, name: string): boolean {
  for (let s = scope; s; s = s.parent) if (s.ctes.has(name)) return true;
  return false;
}

function visitStatement(walk: Walk, node: Ast | undefined, parent: Scope | null): Scope | null {
  if (!node) return null;
  if (node.SelectStmt) return visitSelect(walk, node.SelectStmt, parent);
  if (node.InsertStmt) return visitInsert(walk, node.InsertStmt, parent);
  if (node.UpdateStmt) return visitModify(walk, node.UpdateStmt, parent, 'fromClause', ['targetList']);
  if (node.DeleteStmt) return visitModify(walk, node.DeleteStmt, parent, 'usingClause', []);
  return null;
}

/** A WITH clause: its names are visible to the statement and to each other; each query is visited. */
function visitWith(walk: Walk, withClause: Ast | undefined, scope: Scope): void {
  const ctes: Ast[] = withClause?.ctes ?? [];
  for (const cte of ctes) scope.ctes.add(cte.CommonTableExpr.ctename);
  for (const cte of ctes) visitStatement(walk, cte.CommonTableExpr.ctequery, scope);
}

function visitSelect(walk: Walk, select: Ast, parent: Scope | null): Scope {
  const scope = newScope(parent);
  visitWith(walk, select.withClause, scope);
  if (select.larg || select.rarg) {
    visitSelect(walk, select.larg, scope);
    visitSelect(walk, select.rarg, scope);
    return scope;
  }
  const conjuncts: Ast[] = [];
  for (const item of select.fromClause ?? []) collectFrom(item, scope, conjuncts);
  conjuncts.push(...andParts(select.whereClause));
  settle(walk, scope, conjuncts);
  for (const part of [
    select.targetList,
    select.whereClause,
    select.havingClause,
    select.fromClause,
    select.valuesLists,
    select.sortClause,
  ]) {
    visitNested(walk, part, scope);
  }
  return scope;
}

/** UPDATE or DELETE: the target and the FROM/USING tables share one level; each must be anchored. */
function visitModify(walk: Walk, stmt: Ast, parent: Scope | null, fromKey: string, nestedKeys: string[]): Scope {
  const scope = newScope(parent);
  visitWith(walk, stmt.withClause, scope);
  walk.finding.writes.push(stmt.relation.relname);
  const conjuncts: Ast[] = [];
  collectFrom({ RangeVar: stmt.relation }, scope, conjuncts);
  for (const item of stmt[fromKey] ?? []) collectFrom(item, scope, conjuncts);
  conjuncts.push(...andParts(stmt.whereClause));
  settle(walk, scope, conjuncts);
  for (const key of [...nestedKeys, fromKey, 'whereClause', 'returningList']) visitNested(walk, stmt[key], scope);
  return scope;
}

/** INSERT into a tenant-owned table: tenant_id is among its columns and given as one value. */
function visitInsert(walk: Walk, insert: Ast, parent: Scope | null): Scope {
  const scope = newScope(parent);
  visitWith(walk, insert.withClause, scope);
  const table: string = insert.relation.relname;
  walk.finding.writes.push(table);
  const source = insert.selectStmt?.SelectStmt as Ast | undefined;
  const sourceScope = source ? visitSelect(walk, source, scope) : null;
  if (TENANT_OWNED.has(table) && !cteVisible(scope, table)) {
    const column = (insert.cols ?? []).findIndex((c: Ast) => c.ResTarget.name === 'tenant_id');
    const given = column < 0 || !source ? [] : insertedValues(source, column);
    const values = given.map((expr) => valueOf(expr, sourceScope));
    if (values.length === 0 || values.some((v) => v === null))
      walk.finding.violations.push(`INSERT INTO ${table} without one tenant_id value`);
    else
      for (const value of values as string[])
        if (!value.endsWith('.tenant_id')) walk.finding.bindings.push({ table, value });
  }
  visitNested(walk, insert.onConflictClause, scope);
  visitNested(walk, insert.returningList, scope);
  return scope;
}

/** The expressions an INSERT gives its `column`-th column: from each VALUES row, or the SELECT's list. */
function insertedValues(source: Ast, column: number): Ast[] {
  if (source.valuesLists) return source.valuesLists.map((row: Ast) => row.List.items[column]);
  if (source.larg || source.rarg)
    return [...insertedValues(source.larg, column), ...insertedValues(source.rarg, column)];
  const target = source.targetList?.[column]?.ResTarget?.val;
  return target && !target.ColumnRef?.fields?.some((f: Ast) => f.A_Star) ? [target] : [];
}

/** Adds a FROM item's tenant-owned tables to `scope` and its join conditions to `conjuncts`. */
function collectFrom(item: Ast, scope: Scope, conjuncts: Ast[]): void {
  if (item.RangeVar) {
    const name: string = item.RangeVar.relname;
    if (TENANT_OWNED.has(name) && !cteVisible(scope, name))
      scope.relations.set(item.RangeVar.alias?.aliasname ?? name, name);
  } else if (item.JoinExpr) {
    collectFrom(item.JoinExpr.larg, scope, conjuncts);
    collectFrom(item.JoinExpr.rarg, scope, conjuncts);
    conjuncts.push(...andParts(item.JoinExpr.quals));
  }
}

/** The parts of a condition joined by AND (the whole condition when it is not an AND). */
function andParts(condition: Ast | undefined): Ast[] {
  if (!condition) return [];
  if (condition.BoolExpr?.boolop === 'AND_EXPR') return condition.BoolExpr.args.flatMap(andParts);
  return [condition];
}

/**
 * Anchors this level's tables from its `a = b` conditions: a table is anchored when its tenant_id
 * equals a value (a parameter, a literal, an anchored table's tenant_id in an enclosing query), or
 * the tenant_id of a table anchored here. Records a violation for each table left unanchored.
 */
function settle(walk: Walk, scope: Scope, conjuncts: Ast[]): void {
  const pairs = conjuncts.flatMap((c) => {
    const e = c.A_Expr;
    return e && e.kind === 'AEXPR_OP' && e.name?.[0]?.String?.sval === '=' ? [[e.lexpr, e.rexpr] as [Ast, Ast]] : [];
  });
  for (let changed = true; changed;) {
    changed = false;
    for (const [left, right] of pairs) {
      for (const [column, other] of [
        [left, right],
        [right, left],
      ] as const) {
        const alias = localTenantColumn(column, scope);
        if (alias === null || scope.anchored.has(alias)) continue;
        const value = valueOf(other, scope);
        if (value === null) continue;
        scope.anchored.add(alias);
        if (!value.endsWith('.tenant_id')) walk.finding.bindings.push({ table: scope.relations.get(alias)!, value });
        changed = true;
      }
    }
  }
  for (const [alias, table] of scope.relations) {
    if (!scope.anchored.has(alias))
      walk.finding.violations.push(
        `${table}${alias === table ? '' : ` (as ${alias})`} without tenant_id = <one value>`,
      );
  }
}

/** The alias of this level's tenant-owned table whose tenant_id `expr` is, or null. */
function localTenantColumn(expr: Ast, scope: Scope): string | null {
  const fields = (expr.ColumnRef?.fields ?? []).map((f: Ast) => f.String?.sval);
  if (fields.at(-1) !== 'tenant_id') return null;
  if (fields.length === 2) return scope.relations.has(fields[0]) ? fields[0] : null;
  // Unqualified: PostgreSQL resolves it to the one table of this level that has the column.
  return fields.length === 1 && scope.relations.size === 1 ? [...scope.relations.keys()][0]! : null;
}

/** `expr` as one tenant value: `$n`, a literal, or `<alias>.tenant_id` of an anchored table; else null. */
function valueOf(expr: Ast | undefined, scope: Scope | null): string | null {
  if (!expr) return null;
  if (expr.TypeCast) return valueOf(expr.TypeCast.arg, scope);
  if (expr.ParamRef) return `$${expr.ParamRef.number}`;
  if (expr.A_Const) return expr.A_Const.sval ? `'${expr.A_Const.sval.sval}'` : null;
  const fields = (expr.ColumnRef?.fields ?? []).map((f: Ast) => f.String?.sval);
  if (fields.at(-1) !== 'tenant_id') return null;
  for (let s = scope; s; s = s.parent) {
    const alias = fields.length === 2 ? fields[0] : s.relations.size === 1 ? [...s.relations.keys()][0] : undefined;
    if (alias !== undefined && s.relations.has(alias)) return s.anchored.has(alias) ? `${alias}.tenant_id` : null;
  }
  return null;
}

/** Visits the queries nested in `node` (subqueries in FROM, sublinks in expressions) under `scope`. */
function visitNested(walk: Walk, node: unknown, scope: Scope): void {
  if (Array.isArray(node)) {
    for (const item of node) visitNested(walk, item, scope);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const ast = node as Ast;
  if (ast.SubLink) {
    visitNested(walk, ast.SubLink.testexpr, scope);
    visitStatement(walk, ast.SubLink.subselect, scope);
    return;
  }
  if (ast.RangeSubselect) {
    visitStatement(walk, ast.RangeSubselect.subquery, scope);
    return;
  }
  if (ast.SelectStmt || ast.InsertStmt || ast.UpdateStmt || ast.DeleteStmt) {
    visitStatement(walk, ast, scope);
    return;
  }
  for (const value of Object.values(ast)) visitNested(walk, value, scope);
}
