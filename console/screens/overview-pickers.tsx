// The overview's pickers: the range of Caracas days (a preset or a custom one) and, for the platform
// key, the tenant (every tenant, or one) and the mode.
import { useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { formatCount } from '../format.ts';
import { presetRange, type ReportRange } from '../report.ts';
import { tenantsForPicker } from '../tenant-picker.ts';
import { useLoad } from '../ui.tsx';
import type { Scope } from './overview-url.ts';

export function RangePicker({ range, onRange }: { range: ReportRange; onRange: (range: ReportRange) => void }) {
  const [draft, setDraft] = useState(range);
  const presets = [
    ['today', 'Today (hourly)'],
    ['7d', '7 days (hourly)'],
    ['30d', '30 days (daily)'],
  ] as const;
  return (
    <div class="range">
      <div class="toolbar" role="group" aria-label="Range">
        {presets.map(([preset, label]) => (
          <button
            key={preset}
            type="button"
            aria-pressed={range.preset === preset}
            onClick={() => onRange(presetRange(preset, new Date()))}
          >
            {label}
          </button>
        ))}
      </div>
      <form
        class="filters"
        aria-label="Custom range"
        onSubmit={(event) => {
          event.preventDefault();
          onRange({ ...draft, preset: 'custom' });
        }}
      >
        <div>
          <label for="range-from">From (Caracas day)</label>
          <input
            id="range-from"
            type="date"
            required
            value={draft.from}
            onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })}
          />
        </div>
        <div>
          <label for="range-to">To (Caracas day)</label>
          <input
            id="range-to"
            type="date"
            required
            value={draft.to}
            onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })}
          />
        </div>
        <div>
          <label for="range-granularity">Per</label>
          <select
            id="range-granularity"
            value={draft.granularity}
            onInput={(e) => setDraft({ ...draft, granularity: e.currentTarget.value as 'hour' | 'day' })}
          >
            <option value="hour">hour (up to 31 days)</option>
            <option value="day">day (up to 366 days)</option>
          </select>
        </div>
        <button type="submit" aria-pressed={range.preset === 'custom'}>
          Show range
        </button>
      </form>
    </div>
  );
}

export function PlatformScope({ api, scope, onScope }: { api: Api; scope: Scope; onScope: (scope: Scope) => void }) {
  const picker = useLoad(() => tenantsForPicker(api), []);
  const listed = picker.data?.tenants ?? [];
  return (
    <div class="filters" role="group" aria-label="Tenant and mode">
      <div>
        <label for="overview-tenant">Tenant</label>
        <select
          id="overview-tenant"
          value={listed.some((tenant) => tenant.id === scope.tenantId) ? scope.tenantId : ''}
          onInput={(e) => onScope({ ...scope, tenantId: e.currentTarget.value })}
        >
          <option value="">all tenants</option>
          {listed.map((tenant) => (
            <option key={tenant.id} value={tenant.id}>
              {tenant.name}
            </option>
          ))}
        </select>
      </div>
      {picker.data?.more ? (
        <div>
          <label for="overview-tenant-id">Or a tenant id (the list shows the first {formatCount(listed.length)})</label>
          <input
            id="overview-tenant-id"
            value={listed.some((tenant) => tenant.id === scope.tenantId) ? '' : scope.tenantId}
            onChange={(e) => onScope({ ...scope, tenantId: e.currentTarget.value.trim() })}
          />
        </div>
      ) : null}
      <div>
        <label for="overview-mode">Mode</label>
        <select
          id="overview-mode"
          value={scope.mode}
          onInput={(e) => onScope({ ...scope, mode: e.currentTarget.value as 'test' | 'live' })}
        >
          <option value="test">test</option>
          <option value="live">live</option>
        </select>
      </div>
    </div>
  );
}
