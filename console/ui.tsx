// Small shared pieces: amounts, times, errors, loading, paging, links and the confirmation dialog.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';
import { formatMinor, formatTimes } from './format.ts';
import { BASE, navigate } from './router.ts';

export function Amount({ minor, asset = 'BS' }: { minor: string | null | undefined; asset?: string }) {
  return <span class="amount">{formatMinor(minor, asset)}</span>;
}

/** A moment in Caracas time, with UTC beneath. */
export function Time({ iso }: { iso: string | null | undefined }) {
  const times = formatTimes(iso);
  if (!times || !iso) return <span class="muted">—</span>;
  return (
    <time class="time" dateTime={iso}>
      <span>{times.caracas} Caracas</span>
      <span class="muted">{times.utc} UTC</span>
    </time>
  );
}

export function Link({
  to,
  children,
  class: className,
  current,
}: {
  to: string;
  children: ComponentChildren;
  class?: string;
  current?: boolean;
}) {
  return (
    <a
      class={className}
      aria-current={current ? 'page' : undefined}
      href={BASE + to}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const failure = error instanceof ApiFailure ? error : undefined;
  return (
    <p class="error" role="alert">
      {failure ? (
        <>
          <strong>{failure.status > 0 ? `${failure.status} ${failure.code}` : failure.code}</strong>: {failure.message}
          {failure.requestId ? <span class="muted"> (request {failure.requestId})</span> : null}
        </>
      ) : (
        String(error instanceof Error ? error.message : error)
      )}
    </p>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Loads `load()` when a dependency changes; the last call wins. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const current = useRef(0);
  useEffect(() => {
    const call = ++current.current;
    setState((previous) => ({ data: previous.data, loading: true }));
    load().then(
      (data) => call === current.current && setState({ data, loading: false }),
      (error: unknown) => call === current.current && setState({ error, loading: false }),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export function Loading({ loaded }: { loaded: Loaded<unknown> }) {
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  return loaded.loading ? (
    <p class="muted" role="status">
      Loading…
    </p>
  ) : null;
}

/** Cursor paging: the cursors of the pages before this one are kept, so "Newer" goes back exactly. */
export function useCursor(resetOn: unknown[]) {
  const [stack, setStack] = useState<Array<string | undefined>>([undefined]);
  useEffect(() => setStack([undefined]), resetOn);
  return {
    cursor: stack[stack.length - 1],
    page: stack.length,
    older: (next: string) => setStack((s) => [...s, next]),
    newer: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
  };
}

export function Pager({
  paging,
  nextCursor,
  label,
}: {
  paging: ReturnType<typeof useCursor>;
  nextCursor: string | null | undefined;
  label: string;
}) {
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" onClick={paging.newer} disabled={paging.page <= 1}>
        ← Newer
      </button>
      <span>Page {paging.page}</span>
      <button type="button" onClick={() => nextCursor && paging.older(nextCursor)} disabled={!nextCursor}>
        Older →
      </button>
    </nav>
  );
}

/**
 * Asks before an action that changes something. A modal <dialog>: the browser keeps focus inside it,
 * Escape cancels, and focus returns to the button that opened it.
 */
export function ConfirmButton({
  label,
  title,
  children,
  confirmLabel,
  onConfirm,
  disabled,
}: {
  label: string;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  disabled?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const titleId = useRef(`confirm-${Math.random().toString(36).slice(2)}`).current;
  return (
    <>
      <button type="button" onClick={() => (setError(undefined), dialog.current?.showModal())} disabled={disabled}>
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId} class="confirm">
        <h2 id={titleId}>{title}</h2>
        <div>{children}</div>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()} autoFocus>
            Cancel
          </button>
          <button
            type="button"
            class="primary"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await onConfirm();
                dialog.current?.close();
              } catch (failure) {
                setError(failure);
              } finally {
                setBusy(false);
              }
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** The screen's title, focused when the screen opens so that keyboard and reader users land on it. */
export function ScreenTitle({ children }: { children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  return (
    <h1 ref={heading} tabIndex={-1}>
      {children}
    </h1>
  );
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function NeedsScope({ scope }: { scope: string }) {
  return <p class="muted">This key lacks the scope {scope}: the API would refuse it (403 scope_missing).</p>;
}
