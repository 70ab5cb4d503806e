// Screens are paths under /console (the server answers the page for any of them), moved between
// with the History API. Nothing secret is ever put in a path or a query.
import { useEffect, useState } from 'preact/hooks';

// Routes match with the id shapes of paths.ts.
export { match } from './paths.ts';

export const BASE = '/console';

const listeners = new Set<() => void>();

/** The path after /console: "/payments/…", or "/" for the console itself. */
function currentPath(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  return path === '' ? '/' : path;
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', BASE + to);
  else history.pushState(null, '', BASE + to);
  for (const listener of listeners) listener();
}

addEventListener('popstate', () => {
  for (const listener of listeners) listener();
});

export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return path;
}
