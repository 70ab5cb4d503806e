// Treasury and limits: the position per asset (prefunding, credit drawn and available) and the
// limit usage with the rule that applies.
import { useState } from 'preact/hooks';
import type { Api, TenantMe } from '../api.ts';
import { apiPath, hasScope } from '../api.ts';
import { Amount, Loading, NeedsScope, ScreenTitle, useLoad } from '../ui.tsx';

const ASSETS = ['BS', 'USD', 'USDC', 'VESC'] as const;

interface Position {
  asset: string;
  prefundingBalance: string;
  platformRevenueFromTenant: string;
  creditEnabled: boolean;
  creditDrawn: string;
  creditLimit: string | null;
  creditAvailable: string | null;
}

interface Usage {
  asset: string;
  usage: { day_amount: string; day_count: string; month_amount: string };
  limit: {
    scope: string;
    method: string;
    per_tx_max: string;
    daily_max: string;
    monthly_max: string | null;
    daily_count_max: string | null;
  } | null;
}

/** One asset's position: credit figures only where credit is enabled. */
function PositionRow({ position: p }: { position: Position }) {
  return (
    <tr>
      <th scope="row">{p.asset}</th>
      <td class="num">
        <Amount minor={p.prefundingBalance} asset={p.asset} />
      </td>
      <td class="num">
        {p.creditEnabled ? <Amount minor={p.creditDrawn} asset={p.asset} /> : <span class="muted">prefunded</span>}
      </td>
      <td class="num">
        {p.creditEnabled ? (
          p.creditLimit === null ? (
            'no ceiling'
          ) : (
            <Amount minor={p.creditLimit} asset={p.asset} />
          )
        ) : (
          '—'
        )}
      </td>
      <td class="num">
        {p.creditEnabled ? (
          p.creditAvailable === null ? (
            'no ceiling'
          ) : (
            <Amount minor={p.creditAvailable} asset={p.asset} />
          )
        ) : (
          '—'
        )}
      </td>
      <td class="num">
        <Amount minor={p.platformRevenueFromTenant} asset={p.asset} />
      </td>
    </tr>
  );
}

function Positions({ api }: { api: Api }) {
  const positions = useLoad(
    () => Promise.all(ASSETS.map((asset) => api.get<Position>(apiPath`/v1/treasury/position`, { asset }))),
    [],
  );
  if (!positions.data) return <Loading loaded={positions} />;
  return (
    <table aria-label="Position per asset">
      <thead>
        <tr>
          <th scope="col">Asset</th>
          <th scope="col" class="num">
            Prefunding balance
          </th>
          <th scope="col" class="num">
            Credit drawn
          </th>
          <th scope="col" class="num">
            Credit limit
          </th>
          <th scope="col" class="num">
            Credit available
          </th>
          <th scope="col" class="num">
            Fees charged
          </th>
        </tr>
      </thead>
      <tbody>
        {positions.data.map((p) => (
          <PositionRow key={p.asset} position={p} />
        ))}
      </tbody>
    </table>
  );
}

function LimitUsage({ api }: { api: Api }) {
  const [draft, setDraft] = useState('');
  const [customerId, setCustomerId] = useState('');
  const usage = useLoad(() => api.get<Usage>(apiPath`/v1/limits/usage`, { asset: 'BS', customerId }), [customerId]);
  return (
    <>
      <form
        class="filters"
        aria-label="Limit usage of"
        onSubmit={(event) => {
          event.preventDefault();
          setCustomerId(draft.trim());
        }}
      >
        <div>
          <label for="usage-customer">Customer id (empty: the whole program)</label>
          <input
            id="usage-customer"
            type="text"
            spellcheck={false}
            autoComplete="off"
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
          />
        </div>
        <div class="actions">
          <button type="submit">Show usage</button>
        </div>
      </form>
      {!usage.data ? (
        <Loading loaded={usage} />
      ) : (
        <dl class="facts">
          <dt>Delivered today (Caracas)</dt>
          <dd>
            <Amount minor={usage.data.usage.day_amount} /> in {usage.data.usage.day_count} payouts
          </dd>
          <dt>Delivered this month</dt>
          <dd>
            <Amount minor={usage.data.usage.month_amount} />
          </dd>
          <dt>Rule that applies</dt>
          <dd>
            {usage.data.limit === null ? (
              'none: only the instrument caps and the rail floor'
            ) : (
              <>
                {usage.data.limit.scope} rule, method {usage.data.limit.method}: per payout{' '}
                <Amount minor={usage.data.limit.per_tx_max} />, per day <Amount minor={usage.data.limit.daily_max} />
                {usage.data.limit.monthly_max ? (
                  <>
                    , per month <Amount minor={usage.data.limit.monthly_max} />
                  </>
                ) : null}
                {usage.data.limit.daily_count_max ? (
                  <>, at most {usage.data.limit.daily_count_max} payouts a day</>
                ) : null}
              </>
            )}
          </dd>
        </dl>
      )}
    </>
  );
}

export function TreasuryScreen({ api, me }: { api: Api; me: TenantMe }) {
  return (
    <section>
      <ScreenTitle>Treasury and limits</ScreenTitle>
      <h2>Position</h2>
      {hasScope(me, 'treasury:read') ? <Positions api={api} /> : <NeedsScope scope="treasury:read" />}
      <h2>Limit usage (BS)</h2>
      {hasScope(me, 'payments:read') ? <LimitUsage api={api} /> : <NeedsScope scope="payments:read" />}
    </section>
  );
}
