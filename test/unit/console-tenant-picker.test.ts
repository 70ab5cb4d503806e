import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TENANT_PAGE, TENANT_PAGES_MAX, tenantsForPicker } from '../../console/tenant-picker.ts';

/** An admin API of `count` tenants, paged as GET /v1/admin/tenants pages them (limit, cursor). */
function adminOf(count: number) {
  const calls: Record<string, string | undefined>[] = [];
  const tenants = Array.from({ length: count }, (_, i) => ({ id: `t${i}`, name: `Tenant ${i}` }));
  return {
    calls,
    async get<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
      assert.equal(path, '/v1/admin/tenants');
      calls.push(query);
      const from = query.cursor ? Number(query.cursor) : 0;
      const data = tenants.slice(from, from + Number(query.limit));
      const more = from + data.length < count;
      return { data, has_more: more, next_cursor: more ? String(from + data.length) : null } as T;
    },
  };
}

test('the picker lists every tenant, page after page, when they fit its bound', async () => {
  const api = adminOf(250);
  const picked = await tenantsForPicker(api as never);
  assert.equal(picked.tenants.length, 250);
  assert.equal(picked.tenants.at(-1)!.id, 't249');
  assert.equal(picked.more, false);
  assert.deepEqual(
    api.calls.map((c) => c.cursor),
    [undefined, '100', '200'],
  );
});

test('past its bound the picker stops and says more tenants remain (picked by id)', async () => {
  const api = adminOf(TENANT_PAGE * TENANT_PAGES_MAX + 1);
  const picked = await tenantsForPicker(api as never);
  assert.equal(picked.tenants.length, TENANT_PAGE * TENANT_PAGES_MAX);
  assert.equal(picked.more, true);
  assert.equal(api.calls.length, TENANT_PAGES_MAX);
  const exact = await tenantsForPicker(adminOf(TENANT_PAGE * TENANT_PAGES_MAX) as never);
  assert.equal(exact.more, false, 'exactly the bound: nothing remains');
});
