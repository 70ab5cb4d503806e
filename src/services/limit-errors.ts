import type { LimitBreach } from '../domain/instrument-caps.ts';
import { ApiError } from '../domain/errors.ts';

/** 422 `limit_exceeded`, naming the rule, its cap and scope in `meta`. */
export function limitExceeded(breach: LimitBreach): ApiError {
  const where = breach.scope === 'instrument' ? `the ${breach.method} per-operation cap` : `the ${breach.scope} ${breach.rule} limit`;
  return new ApiError('limit_exceeded', `The payout exceeds ${where} of ${breach.cap} minor units by ${breach.exceededBy}.`, {
    rule: breach.rule,
    cap: breach.cap.toString(),
    scope: breach.scope,
    method: breach.method,
    attempted: breach.attempted.toString(),
    exceeded_by: breach.exceededBy.toString(),
    ...(breach.ruleId ? { rule_id: breach.ruleId } : {}),
  });
}
