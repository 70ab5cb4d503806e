// Reading the Prometheus text exposition in tests.

/**
 * The METRICS_TOKEN every test app and test process runs with: /metrics is never public, so a test
 * scrapes it as Prometheus would, with `Authorization: Bearer …` (metricsHeaders).
 */
export const TEST_METRICS_TOKEN = 'test-metrics-token-0123456789';

export const metricsHeaders: Record<string, string> = { authorization: `Bearer ${TEST_METRICS_TOKEN}` };

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line of an exposition (comments skipped). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The samples of `name` whose labels include `labels`. */
function samplesOf(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return parseExposition(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/** The one value of `name` with `labels` (summed over the labels not given); undefined when absent. */
export function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samplesOf(text, name, labels);
  return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0);
}

/** The metric families the exposition declares (# TYPE lines). */
export function familiesOf(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(match[1]!, match[2]!);
  return families;
}

export const UUID_PATTERN = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
