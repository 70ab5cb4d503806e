// The tenant-scope check (test/support/tenant-scope.ts) on statements written for it: it must see a
// missing tenant predicate, or the integration test that runs the money paths through it proves nothing.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { checkStatement, isMoneyTransaction, loadParser } from '../support/tenant-scope.ts';

describe('tenant scope check', () => {
  before(() => loadParser());

  const flagged = (sql: string) => checkStatement(sql).violations;

  it('flags an UPDATE, DELETE or SELECT of a tenant-owned table that does not bind tenant_id', () => {
    assert.deepEqual(flagged('UPDATE payments SET status = $1 WHERE id = $2'), [
      'payments without tenant_id = <one value>',
    ]);
    assert.equal(flagged('DELETE FROM idempotency_keys WHERE key = $1').length, 1);
    assert.equal(flagged('SELECT * FROM ledger_accounts WHERE mode = $1 AND asset = $2').length, 1);
    assert.equal(
      flagged('SELECT * FROM payments WHERE tenant_id = ANY($1::uuid[]) AND id = $2').length,
      1,
      'many tenants are many shards',
    );
    assert.equal(flagged('SELECT * FROM payments WHERE tenant_id = $1 OR id = $2').length, 1, 'an OR binds nothing');
  });

  it('flags a table bound only to a column of unnest(…): one statement for many tenants', () => {
    const sql = `UPDATE idempotency_keys k SET status = 'completed' FROM unnest($1::uuid[], $2::text[]) AS v(tenant_id, key)
                  WHERE k.tenant_id = v.tenant_id AND k.key = v.key`;
    assert.deepEqual(flagged(sql), ['idempotency_keys (as k) without tenant_id = <one value>']);
  });

  it('flags a join whose second table is not bound, directly or through the first one', () => {
    const sql = 'SELECT * FROM payments p JOIN payment_transitions t ON t.payment_id = p.id WHERE p.tenant_id = $1';
    assert.deepEqual(flagged(sql), ['payment_transitions (as t) without tenant_id = <one value>']);
    assert.deepEqual(
      flagged(
        'SELECT * FROM payments p JOIN payment_transitions t ON t.tenant_id = p.tenant_id AND t.payment_id = p.id WHERE p.tenant_id = $1',
      ),
      [],
    );
  });

  it('flags an INSERT that does not give tenant_id, or gives it from many rows of tenants', () => {
    assert.equal(flagged('INSERT INTO payments (id) VALUES ($1)').length, 1);
    assert.equal(
      flagged('INSERT INTO payments (tenant_id, id) SELECT v.t, v.id FROM unnest($1::uuid[], $2::uuid[]) AS v(t, id)')
        .length,
      1,
    );
    assert.deepEqual(
      flagged('INSERT INTO payments (tenant_id, id) SELECT $1, v.id FROM unnest($2::uuid[]) AS v(id)'),
      [],
    );
  });

  it('reads tenant-bound statements through CTEs, subqueries and an enclosing query', () => {
    const sql = `WITH pay AS (SELECT p.id FROM payments p WHERE p.tenant_id = $1 AND p.id = ANY($2::uuid[]) FOR UPDATE),
                      moved AS (UPDATE ledger_accounts a SET balance = a.balance + 1 WHERE a.tenant_id = $1 RETURNING 1)
                 SELECT (SELECT count(*) FROM payment_transitions t WHERE t.tenant_id = o.tenant_id) FROM outbox_events o, pay
                  WHERE o.tenant_id = $1`;
    const finding = checkStatement(sql);
    assert.deepEqual(finding.violations, []);
    assert.deepEqual([...new Set(finding.bindings.map((b) => b.value))], ['$1']);
    assert.deepEqual([...new Set(finding.bindings.map((b) => b.table))].sort(), [
      'ledger_accounts',
      'outbox_events',
      'payments',
    ]);
    assert.deepEqual(finding.writes, ['ledger_accounts']);
  });

  it('leaves reference and coordinator tables alone, and names the money transactions', () => {
    assert.deepEqual(
      flagged(`SELECT * FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.key_hash = $1`),
      [],
    );
    assert.equal(
      isMoneyTransaction([checkStatement('UPDATE payments SET status = $1 WHERE tenant_id = $2 AND id = $3')]),
      true,
    );
    assert.equal(
      isMoneyTransaction([checkStatement('UPDATE webhook_endpoints SET url = $1 WHERE tenant_id = $2')]),
      false,
    );
  });
});
