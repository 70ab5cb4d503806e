// The operator console: sign in with an API key, then the screens that key may use.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Api, ApiFailure, apiPath, hasScope, storedKey, storeKey, type TenantMe } from './api.ts';
import './console.css';
import { match, navigate, usePath } from './router.ts';
import { LimitRulesScreen, TenantScreen, TenantsScreen } from './screens/admin.tsx';
import { AdminPaymentScreen, AuditScreen } from './screens/audit.tsx';
import { BatchesScreen, BatchScreen } from './screens/batches.tsx';
import { BeneficiariesScreen, BeneficiaryScreen } from './screens/beneficiaries.tsx';
import { EventScreen, EventsScreen } from './screens/events.tsx';
import { PaymentScreen } from './screens/payment.tsx';
import { PaymentsScreen } from './screens/payments.tsx';
import { PayrollScreen } from './screens/payroll.tsx';
import { RailsScreen } from './screens/rails.tsx';
import { OverviewScreen } from './screens/overview.tsx';
import { NeedsReviewScreen } from './screens/review.tsx';
import { SandboxScreen } from './screens/sandbox.tsx';
import { TreasuryScreen } from './screens/treasury.tsx';
import { tenantStatementOf } from './statement.ts';
import { ErrorNote, Link } from './ui.tsx';

interface Session {
  api: Api;
  me: TenantMe;
}

interface Screen {
  path: string;
  label: string;
  /** Shown in the navigation when the key may use it. */
  available: (me: TenantMe) => boolean;
}

const CUSTOMER_SCREENS: Screen[] = [
  { path: '/overview', label: 'Overview', available: (me) => hasScope(me, 'payments:read') },
  { path: '/payments', label: 'Payments', available: (me) => hasScope(me, 'payments:read') },
  {
    path: '/payroll',
    label: 'Payroll',
    available: (me) => hasScope(me, 'payments:write') && hasScope(me, 'payments:read'),
  },
  { path: '/batches', label: 'Payout batches', available: (me) => hasScope(me, 'payments:read') },
  { path: '/events', label: 'Events', available: (me) => hasScope(me, 'events:read') },
  {
    path: '/treasury',
    label: 'Treasury and limits',
    available: (me) => hasScope(me, 'treasury:read') || hasScope(me, 'payments:read'),
  },
  { path: '/beneficiaries', label: 'Beneficiaries', available: (me) => hasScope(me, 'beneficiaries:read') },
  { path: '/sandbox', label: 'Sandbox', available: (me) => me.mode === 'test' },
];

const PLATFORM_SCREENS: Screen[] = [
  { path: '/overview', label: 'Overview', available: () => true },
  { path: '/tenants', label: 'Tenants', available: () => true },
  { path: '/limits', label: 'Limits and rates', available: () => true },
  { path: '/audit', label: 'Audit trail', available: () => true },
  { path: '/review', label: 'Needs review', available: () => true },
  { path: '/rails', label: 'Rail health', available: () => true },
];

async function signIn(key: string): Promise<Session> {
  const api = new Api(key);
  return { api, me: await api.get<TenantMe>(apiPath`/v1/tenant/me`) };
}

function SignIn({ onSession, note }: { onSession: (session: Session, key: string) => void; note?: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin">
      <h1>Bolivar operator console</h1>
      {note ? <p class="notice">{note}</p> : null}
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(undefined);
          try {
            const trimmed = key.trim();
            onSession(await signIn(trimmed), trimmed);
          } catch (failure) {
            setError(failure);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          autoFocus
        />
        <p class="muted">
          A tenant key (bsk_test_…, bsk_live_…) shows that program; the platform key (bsk_platform_…) the admin screens.
          The key stays in this tab (sessionStorage) and is sent only in the x-api-key header to this service.
        </p>
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}

function Screens({ session, path }: { session: Session; path: string }) {
  const { api, me } = session;
  if (match('/overview', path) && (me.isPlatform || hasScope(me, 'payments:read')))
    return <OverviewScreen api={api} me={me} />;
  if (me.isPlatform) {
    if (match('/tenants', path)) return <TenantsScreen api={api} />;
    const tenant = match('/tenants/:id', path, { id: 'uuid' });
    if (tenant) return <TenantScreen api={api} id={tenant.id!} />;
    if (match('/limits', path)) return <LimitRulesScreen api={api} />;
    if (match('/audit', path)) return <AuditScreen api={api} />;
    const statement = match('/tenants/:tenantId/payments', path, { tenantId: 'uuid' });
    if (statement) return <PaymentsScreen api={api} of={tenantStatementOf(statement.tenantId, location.search)} />;
    const tenantPayment = match('/tenants/:tenantId/payments/:id', path, { tenantId: 'uuid', id: 'uuid' });
    if (tenantPayment)
      return <AdminPaymentScreen api={api} tenantId={tenantPayment.tenantId!} id={tenantPayment.id!} />;
    if (match('/review', path)) return <NeedsReviewScreen api={api} />;
    if (match('/rails', path)) return <RailsScreen api={api} />;
  } else {
    if (match('/payments', path)) return <PaymentsScreen api={api} />;
    const payment = match('/payments/:id', path, { id: 'uuid' });
    if (payment) return <PaymentScreen api={api} me={me} id={payment.id!} />;
    if (match('/payroll', path) && hasScope(me, 'payments:write') && hasScope(me, 'payments:read'))
      return <PayrollScreen api={api} />;
    if (match('/batches', path)) return <BatchesScreen api={api} />;
    const batch = match('/batches/:id', path, { id: 'uuid' });
    if (batch) return <BatchScreen api={api} id={batch.id!} />;
    if (match('/events', path)) return <EventsScreen api={api} me={me} />;
    const event = match('/events/:id', path, { id: 'numeric' });
    if (event) return <EventScreen api={api} me={me} id={event.id!} />;
    if (match('/treasury', path)) return <TreasuryScreen api={api} me={me} />;
    if (match('/beneficiaries', path)) return <BeneficiariesScreen api={api} />;
    const beneficiary = match('/beneficiaries/:id', path, { id: 'uuid' });
    if (beneficiary) return <BeneficiaryScreen api={api} me={me} id={beneficiary.id!} />;
    if (match('/sandbox', path) && me.mode === 'test') return <SandboxScreen api={api} me={me} />;
  }
  return (
    <section>
      <h1>Not a screen of this console</h1>
      <p>Pick a screen in the navigation.</p>
    </section>
  );
}

/** Who is signed in (name, mode, scopes) and the way out. */
function TopBar({ me, onSignOut }: { me: TenantMe; onSignOut: () => void }) {
  return (
    <header class="top">
      <span class="brand">Bolivar console</span>
      <span>
        {me.name} ·{' '}
        <span class={`mode mode-${me.isPlatform ? 'platform' : me.mode}`}>{me.isPlatform ? 'platform' : me.mode}</span>
      </span>
      <span class="muted scopes" title="Scopes of this key">
        {me.scopes.join(', ')}
      </span>
      <button type="button" onClick={onSignOut}>
        Sign out
      </button>
    </header>
  );
}

function Console() {
  const path = usePath();
  const [session, setSession] = useState<Session | undefined>(undefined);
  const [restoring, setRestoring] = useState(() => storedKey() !== null);
  const [note, setNote] = useState<string | undefined>(undefined);

  useEffect(() => {
    const key = storedKey();
    if (key === null) return;
    signIn(key)
      .then(setSession, (failure: unknown) => {
        storeKey(null);
        if (failure instanceof ApiFailure && failure.status === 401)
          setNote('The saved key was refused (revoked or unknown): sign in again.');
      })
      .finally(() => setRestoring(false));
  }, []);

  const screens = session
    ? (session.me.isPlatform ? PLATFORM_SCREENS : CUSTOMER_SCREENS).filter((s) => s.available(session.me))
    : [];
  useEffect(() => {
    if (session && (path === '/' || path === '') && screens[0]) navigate(screens[0].path, { replace: true });
  }, [session, path]);

  if (restoring) return <p role="status">Signing in…</p>;
  if (!session) {
    return (
      <SignIn
        note={note}
        onSession={(next, key) => {
          storeKey(key);
          setNote(undefined);
          setSession(next);
        }}
      />
    );
  }
  const { me } = session;
  return (
    <>
      <a class="skip" href="#screen">
        Skip to the screen
      </a>
      <TopBar
        me={me}
        onSignOut={() => {
          storeKey(null);
          setSession(undefined);
          navigate('/', { replace: true });
        }}
      />
      <nav class="screens" aria-label="Screens">
        {screens.map((screen) => (
          <Link key={screen.path} to={screen.path} current={path === screen.path || path.startsWith(`${screen.path}/`)}>
            {screen.label}
          </Link>
        ))}
      </nav>
      <main id="screen">
        <Screens key={path} session={session} path={path} />
      </main>
    </>
  );
}

render(<Console />, document.getElementById('app')!);
