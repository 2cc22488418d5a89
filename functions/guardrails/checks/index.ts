import { allLowercase } from './all-lowercase';
import { allUppercase } from './all-uppercase';
import { allowedRequestTypes } from './allowed-request-types';
import { characterCount } from './character-count';
import { containsCode } from './contains-code';
import { contains } from './contains';
import { endsWith } from './ends-with';
import { jsonKeys } from './json-keys';
import { jsonSchema } from './json-schema';
import { jwt } from './jwt';
import { modelWhitelist } from './model-whitelist';
import { notNull } from './not-null';
import { piiRegex } from './pii-regex';
import { regexMatch } from './regex-match';
import { requiredMetadataKeys } from './required-metadata-keys';
import { sentenceCount } from './sentence-count';
import type { AnyCheck } from './types';
import { validUrls } from './valid-urls';
import { webhook } from './webhook';
import { wordCount } from './word-count';

/** Every check kind, by id (`default.<name>`). */
const ALL: readonly AnyCheck[] = [
  regexMatch,
  contains,
  wordCount,
  sentenceCount,
  characterCount,
  jsonSchema,
  jsonKeys,
  validUrls,
  containsCode,
  endsWith,
  allUppercase,
  allLowercase,
  modelWhitelist,
  requiredMetadataKeys,
  allowedRequestTypes,
  notNull,
  piiRegex,
  webhook,
  jwt,
];

export const CHECKS: ReadonlyMap<string, AnyCheck> = new Map(ALL.map((c) => [c.id, c]));

export const CHECK_IDS: readonly string[] = ALL.map((c) => c.id);

export function getCheck(id: string): AnyCheck | undefined {
  return CHECKS.get(id);
}

export type { AnyCheck, CheckContext, CheckResult, GuardrailCheck } from './types';
