import { Type } from '@sinclair/typebox';
import {
  METADATA_KEY_LENGTH_MAX,
  METADATA_KEYS_MAX,
  METADATA_VALUE_LENGTH_MAX,
  type Metadata as MetadataValue,
} from '../../domain/metadata.ts';
import { Component } from './common.ts';

/**
 * Bounds on the keys of a free-form object. JSON Schema calls it `propertyNames`, which OpenAPI 3.0.3
 * does not have: under an extension keyword the document still states the rule, and the request
 * validator enforces it (validation.ts), so a bad key is refused with every other bad field.
 */
export const PROPERTY_NAMES_KEYWORD = 'x-property-names';

const RULES = `Up to ${METADATA_KEYS_MAX} keys of 1 to ${METADATA_KEY_LENGTH_MAX} characters, each value a string of at most ${METADATA_VALUE_LENGTH_MAX} characters (no nested objects, arrays, numbers or null)`;

const SEMANTICS =
  'Your own key-value pairs for reconciliation (an order or invoice id), stored as sent and never interpreted';

/** `metadata` in a request body; `more` says what it means for that object. */
export const MetadataInput = (more: string) =>
  Type.Unsafe<MetadataValue>({
    type: 'object',
    description: `${SEMANTICS}. ${RULES}; anything else is 400 \`validation_failed\` naming the key (\`metadata.<key>\`), or \`metadata\` itself. ${more}`,
    maxProperties: METADATA_KEYS_MAX,
    [PROPERTY_NAMES_KEYWORD]: { minLength: 1, maxLength: METADATA_KEY_LENGTH_MAX },
    additionalProperties: {
      type: 'string',
      maxLength: METADATA_VALUE_LENGTH_MAX,
      'x-error-message': `must be a string of at most ${METADATA_VALUE_LENGTH_MAX} characters`,
    },
    example: { order_id: '6735', invoice: 'F-2026-0042' },
  });

/** `metadata` in an answer: what was sent, `{}` when nothing was. */
export const Metadata = Component(
  'Metadata',
  Type.Unsafe<MetadataValue>({
    type: 'object',
    description: `${SEMANTICS}; \`{}\` when none was sent. ${RULES}. Key order is not kept`,
    maxProperties: METADATA_KEYS_MAX,
    additionalProperties: { type: 'string' },
    example: { order_id: '6735' },
  }),
);
