// What the CLI says when a call to the service fails: one line naming the service it tried and why,
// the lines it printed before it called the service through the SDK. The SDK's errors keep an error
// answer's status and code but not its body, its Location or the URL those lines quote, so the CLI
// hands the SDK a fetch of its own that keeps them (AnswerLog) and words each failure from that.
import { BolivarConnectionError, BolivarError, type FetchLike } from '../../sdk/src/index.ts';
import { CliError } from './command.ts';

/** The service called: its base URL as given, and where that came from (BOLIVAR_URL or the default). */
export interface Service {
  base: string;
  source: string;
}

/** The last request: its URL, whether an answer arrived, and of an answer other than 2xx its status, Location and body. */
interface Answer {
  url: string;
  arrived: boolean;
  status?: number;
  location?: string | null;
  text?: string;
}

export class AnswerLog {
  last: Answer | undefined;

  constructor(private readonly service: Service) {}

  readonly fetch: FetchLike = async (input, init) => {
    // Named under the base as given: the SDK was handed its scheme in lower case (BOLIVAR_URL may say HTTP://).
    const answer: Answer = { url: `${this.service.base}${input.slice(this.service.base.length)}`, arrived: false };
    this.last = answer;
    const response = await globalThis.fetch(input, init);
    answer.arrived = true;
    if (response.status >= 300) {
      answer.status = response.status;
      answer.location = response.headers.get('location');
      answer.text = await response.clone().text();
    }
    return response;
  };
}

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** The system error code behind a failed fetch (undici puts it on `cause`, or on each error of an AggregateError). */
function networkCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown; errors?: Array<{ code?: unknown }> } })?.cause;
  const code = cause?.code ?? cause?.errors?.find((e) => typeof e?.code === 'string')?.code;
  return typeof code === 'string' ? code : undefined;
}

/** One line for an error answer: status, code, message and request id, from the error envelope when there is one. */
function errorAnswer(status: number, text: string, url: string): string {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: string; message?: string; request_id?: string } };
    if (error?.code)
      return `${status} ${error.code}: ${error.message ?? ''}${error.request_id ? ` (request_id ${error.request_id})` : ''}`;
  } catch {
    // not the envelope: shown as text below
  }
  const body = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  return `HTTP ${status} from ${url}${body ? `: ${body}` : ''} (is BOLIVAR_URL the Bolivar service?)`;
}

function noAnswer(cause: unknown, { base, source }: Service, timeoutMs: number): CliError {
  if ((cause as Error)?.name === 'TimeoutError')
    return new CliError(`no answer from the service at ${base} (${source}) within ${timeoutMs / 1000} s`);
  const code = networkCode(cause);
  const why = code ? `${NETWORK_REASONS[code] ?? code}` : ((cause as Error)?.message ?? String(cause));
  return new CliError(
    `cannot reach the service at ${base} (${source}): ${why}. Start it (npm start), or set BOLIVAR_URL to its base URL, e.g. BOLIVAR_URL=http://localhost:3000`,
  );
}

function redirected(answer: Answer, { base, source }: Service): CliError {
  const { status, location } = answer;
  return new CliError(
    `the service at ${base} (${source}) answered with a redirect (HTTP ${status}${location ? ` to ${location.slice(0, 200)}` : ''}), ` +
      "which the CLI does not follow so that the platform key goes to BOLIVAR_URL only; set BOLIVAR_URL to the service's own URL",
  );
}

/** The error to print for what a call through the SDK threw; anything it does not recognise, as it is. */
export function failureOf(error: unknown, answer: Answer | undefined, service: Service, timeoutMs: number): unknown {
  // An answer that broke off after it began is the error itself, as reading the body always said it.
  if (error instanceof BolivarConnectionError)
    return answer?.arrived ? error.cause : noAnswer(error.cause, service, timeoutMs);
  if (error instanceof BolivarError && answer?.status !== undefined) {
    return answer.status < 400
      ? redirected(answer, service)
      : new CliError(errorAnswer(answer.status, answer.text ?? '', answer.url));
  }
  // The SDK parses a 2xx answer as JSON: a SyntaxError is one that is not.
  if (error instanceof SyntaxError && answer?.arrived)
    return new CliError(`the answer from ${answer.url} is not JSON (is BOLIVAR_URL the Bolivar service?)`);
  return error;
}
